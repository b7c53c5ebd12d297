-- +goose Up
-- Two rollups beside usage_daily, written by LedgerApply in the same statement, so a usage read
-- costs a few hundred rows at most however busy the account: usage_monthly (one row per
-- account, UTC calendar month, key and model) serves the per-key and per-model sums of whole
-- months, and usage_daily_totals (one row per account and UTC day, every key and model summed)
-- the per-day chart. usage_daily stays the export's rows and the part-month edges of a window.
CREATE TABLE usage_monthly (
    account_id TEXT NOT NULL,
    month      BIGINT NOT NULL, -- start of the UTC calendar month, microseconds since the epoch
    key_id     TEXT NOT NULL,
    model      TEXT NOT NULL,
    charged    BIGINT NOT NULL DEFAULT 0,
    refunded   BIGINT NOT NULL DEFAULT 0,
    jobs       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, month, key_id, model)
);
CREATE TABLE usage_daily_totals (
    account_id TEXT NOT NULL,
    day        BIGINT NOT NULL, -- start of the UTC day, microseconds since the epoch
    charged    BIGINT NOT NULL DEFAULT 0,
    refunded   BIGINT NOT NULL DEFAULT 0,
    jobs       BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, day)
);
INSERT INTO usage_monthly (account_id, month, key_id, model, charged, refunded, jobs)
SELECT account_id, CAST(EXTRACT(EPOCH FROM date_trunc('month', to_timestamp(day / 1000000) AT TIME ZONE 'UTC')) AS BIGINT) * 1000000,
       key_id, model, SUM(charged), SUM(refunded), SUM(jobs)
FROM usage_daily
GROUP BY 1, 2, 3, 4;
INSERT INTO usage_daily_totals (account_id, day, charged, refunded, jobs)
SELECT account_id, day, SUM(charged), SUM(refunded), SUM(jobs) FROM usage_daily GROUP BY account_id, day;

-- +goose Down
DROP TABLE usage_daily_totals;
DROP TABLE usage_monthly;
