/**
 * Persisted preset snapshots (the service state: SQLite by default, PostgreSQL shared by replicas). A day's snapshot
 * of a preset is written once, in one transaction, and never changed: a second write of the same (preset, day), from
 * this replica or another, keeps the first and reports whether the new rows were byte-identical (they must be:
 * snapshots are computed only from data stamped that day or before). The head row's INSERT … ON CONFLICT DO NOTHING
 * decides who writes (a concurrent writer waits for the first to commit, then finds it); triggers refuse updates.
 */
import { createHash } from 'node:crypto';
import type { SqlDb, SqlValue } from './sql/db.ts';
import { ServiceStore, openMigrated, refuseChanges, type Migration } from './sql/migrate.ts';
import type { SnapshotRow } from '../core/rankings.ts';

export interface StoredSnapshot {
  preset: string;
  date: string;
  as_of: string;
  computed_at: string;
  top_k: number;
  sha256: string;
  rows: SnapshotRow[];
}

/** Canonical bytes of a snapshot's rows: the sha256 is taken over them. */
export function snapshotBytes(rows: readonly SnapshotRow[]): string {
  return rows.map((r) => `${r.rank}\t${r.key}\t${r.composite.toFixed(9)}`).join('\n');
}

/** The snapshot tables, version by version (data/sql/migrate.ts). */
export const SNAPSHOT_MIGRATIONS: readonly Migration[] = [
  {
    name: '0001-preset-snapshots',
    async up(db) {
      // IF NOT EXISTS: a SQLite file from before versioned migrations already has the tables and triggers
      await db.exec(`CREATE TABLE IF NOT EXISTS preset_snapshots (
          preset TEXT NOT NULL, day TEXT NOT NULL, as_of TEXT NOT NULL, computed_at TEXT NOT NULL,
          top_k INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (preset, day));
        CREATE TABLE IF NOT EXISTS preset_snapshot_rows (
          preset TEXT NOT NULL, day TEXT NOT NULL, rank INTEGER NOT NULL, key TEXT NOT NULL, composite TEXT NOT NULL,
          PRIMARY KEY (preset, day, rank));`);
      await refuseChanges(db, { name: 'snapshot_rows_immutable', table: 'preset_snapshot_rows', ops: ['UPDATE'], message: 'snapshots are immutable' });
      await refuseChanges(db, { name: 'snapshots_immutable', table: 'preset_snapshots', ops: ['UPDATE'], message: 'snapshots are immutable' });
    },
  },
];

/** rows per INSERT statement (5 parameters each) */
const ROWS_PER_INSERT = 100;

type HeadRow = { preset: string; day: string; as_of: string; computed_at: string; top_k: number; sha256: string };

export class SnapshotStore extends ServiceStore {
  /** The store on `target`: an open service database (shared with the other stores), or a SQLite path / PostgreSQL URL it opens and owns. */
  static async open(target: SqlDb | string): Promise<SnapshotStore> {
    const { db, owned } = await openMigrated(target, 'preset_snapshots', SNAPSHOT_MIGRATIONS);
    return new SnapshotStore(db, owned);
  }

  /** Write a day's snapshot unless it exists; returns the stored one and whether the offered rows matched it. */
  async put(s: Omit<StoredSnapshot, 'sha256'>): Promise<{ stored: StoredSnapshot; created: boolean; identical: boolean }> {
    const sha256 = createHash('sha256').update(snapshotBytes(s.rows)).digest('hex');
    const created = await this.db.tx(async (t) => {
      const r = await t.run(`INSERT INTO preset_snapshots (preset, day, as_of, computed_at, top_k, sha256) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (preset, day) DO NOTHING`, [
        s.preset,
        s.date,
        s.as_of,
        s.computed_at,
        s.top_k,
        sha256,
      ]);
      if (r.changes === 0) return false;
      for (let i = 0; i < s.rows.length; i += ROWS_PER_INSERT) {
        const chunk = s.rows.slice(i, i + ROWS_PER_INSERT);
        const params: SqlValue[] = [];
        // composites are kept as their 9-decimal text so reading them back reproduces the same bytes
        for (const row of chunk) params.push(s.preset, s.date, row.rank, row.key, row.composite.toFixed(9));
        await t.run(`INSERT INTO preset_snapshot_rows (preset, day, rank, key, composite) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}`, params);
      }
      return true;
    });
    const stored = (await this.get(s.preset, s.date))!;
    return { stored, created, identical: stored.sha256 === sha256 };
  }

  async get(preset: string, date: string): Promise<StoredSnapshot | null> {
    const head = await this.db.get<HeadRow>(`SELECT * FROM preset_snapshots WHERE preset = ? AND day = ?`, [preset, date]);
    if (!head) return null;
    const rows = await this.db.all<{ rank: number; key: string; composite: string }>(`SELECT rank, key, composite FROM preset_snapshot_rows WHERE preset = ? AND day = ? ORDER BY rank`, [preset, date]);
    return {
      preset: head.preset,
      date: head.day,
      as_of: head.as_of,
      computed_at: head.computed_at,
      top_k: head.top_k,
      sha256: head.sha256,
      rows: rows.map((r) => ({ rank: r.rank, key: r.key, composite: Number(r.composite) })),
    };
  }

  /** The latest stored day of a preset (for "omit date for latest"). */
  async latest(preset: string): Promise<StoredSnapshot | null> {
    const r = await this.db.get<{ day: string }>(`SELECT day FROM preset_snapshots WHERE preset = ? ORDER BY day DESC LIMIT 1`, [preset]);
    return r ? this.get(preset, r.day) : null;
  }

  async days(preset: string): Promise<string[]> {
    return (await this.db.all<{ day: string }>(`SELECT day FROM preset_snapshots WHERE preset = ? ORDER BY day`, [preset])).map((r) => r.day);
  }
}
