// SQL for the images table: one row per image choice that was built or pulled (or tried to be).
import type { Database } from "bun:sqlite";
import type { ImageChoice } from "../images/image-choice";

export type ImageStatus = "building" | "pulling" | "ready" | "failed";

export type ImageRow = {
  /** What was asked, normalized: `default`, `recipe:<packages>` or `oci:<reference>`. */
  sourceKey: string;
  choice: ImageChoice;
  /** The cache directory: `recipe-<hash>` or `sha256-<digest>`; null until known (an OCI digest is asked first). */
  dirKey: string | null;
  digest: string | null;
  status: ImageStatus;
  /** The last progress line while building or pulling, the failure's reason once failed. */
  detail: string | null;
  sizeBytes: number | null;
  createdAt: number;
  updatedAt: number;
  lastUsedAt: number | null;
};

type RawRow = {
  source_key: string;
  choice: string;
  dir_key: string | null;
  digest: string | null;
  status: ImageStatus;
  detail: string | null;
  size_bytes: number | null;
  created_at: number;
  updated_at: number;
  last_used_at: number | null;
};

function fromRaw(raw: RawRow): ImageRow {
  return {
    sourceKey: raw.source_key,
    choice: JSON.parse(raw.choice) as ImageChoice,
    dirKey: raw.dir_key,
    digest: raw.digest,
    status: raw.status,
    detail: raw.detail,
    sizeBytes: raw.size_bytes,
    createdAt: raw.created_at,
    updatedAt: raw.updated_at,
    lastUsedAt: raw.last_used_at,
  };
}

export function createImagesRepo(db: Database) {
  const all = db.query<RawRow, []>("SELECT * FROM images ORDER BY created_at, source_key");
  const byKey = db.query<RawRow, [string]>("SELECT * FROM images WHERE source_key = ?");
  const upsert = db.query(
    `INSERT INTO images (source_key, choice, dir_key, digest, status, detail, size_bytes, created_at, updated_at, last_used_at)
     VALUES ($sourceKey, $choice, $dirKey, $digest, $status, $detail, $sizeBytes, $createdAt, $updatedAt, $lastUsedAt)
     ON CONFLICT(source_key) DO UPDATE SET dir_key = excluded.dir_key, digest = excluded.digest, status = excluded.status,
       detail = excluded.detail, size_bytes = excluded.size_bytes, updated_at = excluded.updated_at, last_used_at = excluded.last_used_at`,
  );
  const remove = db.query<unknown, [string]>("DELETE FROM images WHERE source_key = ?");

  return {
    list(): ImageRow[] {
      return all.all().map(fromRaw);
    },
    get(sourceKey: string): ImageRow | undefined {
      const raw = byKey.get(sourceKey);
      return raw ? fromRaw(raw) : undefined;
    },
    put(row: ImageRow): void {
      upsert.run({
        sourceKey: row.sourceKey,
        choice: JSON.stringify(row.choice),
        dirKey: row.dirKey,
        digest: row.digest,
        status: row.status,
        detail: row.detail,
        sizeBytes: row.sizeBytes,
        createdAt: row.createdAt,
        updatedAt: row.updatedAt,
        lastUsedAt: row.lastUsedAt,
      });
    },
    remove(sourceKey: string): void {
      remove.run(sourceKey);
    },
  };
}

export type ImagesRepo = ReturnType<typeof createImagesRepo>;
