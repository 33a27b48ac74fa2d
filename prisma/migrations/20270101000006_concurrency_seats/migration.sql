-- Concurrency keys as seats (issue 35's throughput target): a key of limit N has seats 1..N, and a live lease
-- holds one of them.
--
-- Until now a key's live leases were counters (concurrency_limits.taken, raised by claims under the key row's
-- lock, and concurrency_releases.released, raised by lease ends): claims of one key queued on its row, and lease
-- ends of one key on theirs, each for the length of the other's commit. With claims of many jobs over many keys,
-- every claim met every other claim in flight. Now a free seat is a row: a claim deletes the free seats it takes,
-- picked with SKIP LOCKED (two claims of one key take different seats, neither waits), and the lease row names
-- its seat; the statement that deletes the lease row inserts the seat back. A row per free seat rather than a
-- holder column: a claim and a lease end each write one index entry at most, where an update of a partially
-- indexed holder column wrote three.
CREATE TABLE "runledger"."concurrency_seats" (
    "key" text NOT NULL,
    "seat" integer NOT NULL,
    CONSTRAINT "concurrency_seats_pkey" PRIMARY KEY ("key", "seat"),
    CONSTRAINT "concurrency_seats_seat_check" CHECK ("seat" >= 1)
);

-- Seats 1..seats of the key exist, each free (a row above) or held (a lease row naming it). Only a statement that
-- raises `seats` under the key row's lock creates seats, the ones above the old value, so no seat is created twice.
-- Seats above a lowered limit stay, and claims never give them out.
ALTER TABLE "runledger"."concurrency_limits" ADD COLUMN "seats" integer NOT NULL DEFAULT 0;
ALTER TABLE "runledger"."concurrency_limits" ADD CONSTRAINT "concurrency_limits_seats_check" CHECK ("seats" >= 0);

ALTER TABLE "runledger"."job_leases" ADD COLUMN "concurrency_seat" integer;

-- The live keyed leases take seats 1.. of their key in lease order; the rest of each key's seats up to its limit
-- are free (more seats than the limit when a lowered limit left more leases than it allows).
WITH numbered AS (
    SELECT l."expires_at", l."job_id",
           row_number() OVER (PARTITION BY l."concurrency_key" ORDER BY l."expires_at", l."job_id")::int AS seat
      FROM "runledger"."job_leases" l
     WHERE l."concurrency_key" IS NOT NULL
)
UPDATE "runledger"."job_leases" l SET "concurrency_seat" = n.seat
  FROM numbered n
 WHERE l."expires_at" = n."expires_at" AND l."job_id" = n."job_id";

UPDATE "runledger"."concurrency_limits" k
   SET "seats" = GREATEST(k."max_leased", (SELECT count(*)::int FROM "runledger"."job_leases" l WHERE l."concurrency_key" = k."key"));

INSERT INTO "runledger"."concurrency_seats" ("key", "seat")
SELECT k."key", s.n
  FROM "runledger"."concurrency_limits" k
 CROSS JOIN LATERAL generate_series(1, k."seats") AS s(n)
 WHERE NOT EXISTS (SELECT 1 FROM "runledger"."job_leases" l WHERE l."concurrency_key" = k."key" AND l."concurrency_seat" = s.n);

-- Live leases per key are its lease rows (each holds one seat).
CREATE OR REPLACE VIEW "runledger"."concurrency_slots" AS
SELECT k."key", k."max_leased", COALESCE(l."leased", 0)::integer AS "leased", k."set_by", k."updated_at"
  FROM "runledger"."concurrency_limits" k
  LEFT JOIN (SELECT "concurrency_key", count(*) AS "leased" FROM "runledger"."job_leases"
              WHERE "concurrency_key" IS NOT NULL GROUP BY "concurrency_key") l ON l."concurrency_key" = k."key";

DROP TABLE "runledger"."concurrency_releases";
ALTER TABLE "runledger"."concurrency_limits" DROP COLUMN "taken";
-- The claim's snapshot test is inline in its statement now (src/queue/statements/concurrency-slots.ts).
DROP FUNCTION "runledger"."concurrency_open"(text, uuid, integer);

COMMENT ON TABLE "runledger"."concurrency_limits" IS
  'One row per concurrency key (migrations 20270101000000, 20270101000006): its limit and how many seats it has (seats, never lowered). Written by enqueue (unless set_by = operator) and setConcurrencyLimit, which create the seats above `seats` when they raise it; claims read it unlocked.';
COMMENT ON TABLE "runledger"."concurrency_seats" IS
  'A concurrency key''s free seats (migration 20270101000006): a claim deletes the ones it takes (picked with SKIP LOCKED, numbered at most max_leased), the lease row names its seat, and the statement that deletes the lease row inserts it back. Lock order: after job rows and lease rows.';
COMMENT ON COLUMN "runledger"."job_leases"."concurrency_seat" IS
  'The seat of its concurrency key the lease holds; the statement that deletes this row frees it (concurrency_seats).';
COMMENT ON VIEW "runledger"."concurrency_slots" IS
  'Each concurrency key''s limit and live leases (its lease rows): what metrics, listConcurrencyLimits, the dashboard and verifyIntegrity read.';
