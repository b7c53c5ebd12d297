-- +goose Up
-- Failed console sign-ins per email (lower-cased), counted where every process sees them: the
-- window starts at the first failure (first_at, Unix microseconds).
CREATE TABLE sign_in_failures (
    email    TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    first_at BIGINT NOT NULL
);
CREATE INDEX sign_in_failures_first ON sign_in_failures(first_at);

-- +goose Down
DROP TABLE sign_in_failures;
