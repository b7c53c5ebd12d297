-- +goose Up
-- Failed console sign-ins per email (lower-cased) and client address, so that a stranger's
-- guesses lock out the stranger's address, not the user. The row of address '*' counts the
-- email's failures from every address together (its bound is higher). Each row's window starts
-- at its first failure (first_at, Unix microseconds); ended windows are swept by first_at. The
-- rows live 15 minutes at most: the old ones are dropped, not carried over.
DROP TABLE sign_in_failures;
CREATE TABLE sign_in_failures (
    email    TEXT NOT NULL,
    address  TEXT NOT NULL,
    failures INTEGER NOT NULL,
    first_at BIGINT NOT NULL,
    PRIMARY KEY (email, address)
);
CREATE INDEX sign_in_failures_first ON sign_in_failures(first_at);

-- +goose Down
DROP TABLE sign_in_failures;
CREATE TABLE sign_in_failures (
    email    TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    first_at BIGINT NOT NULL
);
CREATE INDEX sign_in_failures_first ON sign_in_failures(first_at);
