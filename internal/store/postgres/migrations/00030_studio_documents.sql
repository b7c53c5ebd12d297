-- +goose Up
-- Studio documents (the brief of a project and its canvases): each the whole Yjs document as
-- one update. rev counts the writes that changed it; writers compare and swap on it so merges
-- from several processes never overwrite each other. A project exists while it has a document.
CREATE TABLE studio_documents (
    account_id TEXT NOT NULL,
    project    TEXT NOT NULL,
    doc        TEXT NOT NULL,
    rev        BIGINT NOT NULL,
    state      BYTEA NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, project, doc)
);

-- +goose Down
DROP TABLE studio_documents;
