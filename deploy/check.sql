-- The books after the deployment test's kills: each query prints a row only for a fault, so
-- deploy/test.sh passes when the output is empty.

-- Every account's balance is the sum of its ledger entries.
SELECT 'balance', a.id, a.balance, COALESCE(SUM(l.amount), 0)
FROM accounts a LEFT JOIN ledger_entries l ON l.account_id = a.id
GROUP BY a.id, a.balance HAVING a.balance <> COALESCE(SUM(l.amount), 0);

-- No job is left unsettled, and each settled job has exactly one event (a chat turn none: the
-- request that paid for it answers it).
SELECT 'unsettled', j.request_id, j.status FROM jobs j WHERE j.status <> 'COMPLETED';
SELECT 'events', j.request_id, j.product, count(e.seq)
FROM jobs j LEFT JOIN events e ON e.account_id = j.account_id AND e.job_id = j.id
GROUP BY j.request_id, j.product HAVING count(e.seq) <> CASE WHEN j.product = 'chat' THEN 0 ELSE 1 END;

-- No job is charged twice, and the credits a settled job moved are what it says it charged.
SELECT 'charges', j.request_id, count(*) FROM jobs j
JOIN ledger_entries l ON l.account_id = j.account_id AND l.job_id = j.id AND l.kind = 'charge'
GROUP BY j.request_id HAVING count(*) > 1;
SELECT 'moved', j.request_id, j.charged, COALESCE(SUM(l.amount), 0)
FROM jobs j LEFT JOIN ledger_entries l ON l.account_id = j.account_id AND l.job_id = j.id
GROUP BY j.request_id, j.charged HAVING COALESCE(SUM(l.amount), 0) <> -j.charged;

-- One job per idempotency key of an account: a submit sent again after a cut answer replays.
-- (A key the service minted is kept as nothing: it is its job's request id, unique already.)
SELECT 'idempotency', account_id, idem_key, count(*) FROM jobs WHERE idem_key <> ''
GROUP BY account_id, idem_key HAVING count(*) > 1;
