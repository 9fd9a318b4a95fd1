// Migration 18 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import { LEGACY_IDS_KEY, STORE_ID_KEY } from '../../../internal/message-id.js';
import type { PostgresMigration } from '../migrations.js';
import { pgLiteral } from './v1-3.js';

/**
 * 18 a store id. `<schema>.meta` holds the schema's own facts as text; its first two are the
 * store id, a random UUID made here (so a second schema, or a database dropped and created again,
 * gets another one), and the highest job id handed out before it: an outbox row at or below that
 * id keeps its bare row id as its message id, so a message published before the upgrade is
 * deduplicated as before when it is published again after it. Every later row's message id is
 * `<storeId>:<rowId>`, which no other store produces.
 */
export const MIGRATION_18: PostgresMigration = {
  version: 18,
  name: 'store id',
  sql: (s: string) => `
CREATE TABLE ${s}.meta (
  key text PRIMARY KEY,
  value text NOT NULL
);
INSERT INTO ${s}.meta (key, value) VALUES
  ('${STORE_ID_KEY}', gen_random_uuid()::text),
  ('${LEGACY_IDS_KEY}', coalesce(pg_sequence_last_value(pg_get_serial_sequence(${pgLiteral(`${s}.jobs`)}, 'id')::regclass), 0)::text);
`,
};
