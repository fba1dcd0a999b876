// Numbered schema migrations. Append only: a shipped migration is never edited, since databases in the
// field already ran it. `PRAGMA user_version` records the last one applied.

export type Migration = { version: number; description: string; sql: string };

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions with their sandbox mode and resource override",
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        parent_id TEXT,
        fork_of TEXT,
        directory TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        -- mode columns are meaningful for roots only; children follow their root
        sandboxed INTEGER NOT NULL,
        mode_source TEXT NOT NULL CHECK (mode_source IN ('default', 'explicit', 'fork', 'inherited')),
        toggled_at INTEGER,
        cpus_override INTEGER,
        memory_mib_override INTEGER
      ) STRICT;
      CREATE INDEX sessions_by_parent ON sessions(parent_id);
    `,
  },
  {
    version: 2,
    description: "server-wide sandbox settings, one row per explicitly set key",
    sql: `
      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 3,
    description: "the last stop or removal of each root session's VM, so 'why did my sandbox stop' has an answer",
    sql: `
      CREATE TABLE vm_stops (
        root_session_id TEXT PRIMARY KEY,
        vm_name TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 4,
    description: "a root session's network policy override (JSON), null when it follows the settings",
    sql: `ALTER TABLE sessions ADD COLUMN network_override TEXT;`,
  },
  {
    version: 5,
    description: "a root session's mounts as pinned at its first command (JSON), so a guest's symlink swap cannot move them",
    sql: `ALTER TABLE sessions ADD COLUMN pinned_mounts TEXT;`,
  },
  {
    version: 6,
    description: "guest images built or pulled on request (one row per choice, sharing a cache directory per digest), and a root session's image override",
    sql: `
      CREATE TABLE images (
        source_key TEXT PRIMARY KEY,
        choice TEXT NOT NULL,
        dir_key TEXT,
        digest TEXT,
        status TEXT NOT NULL CHECK (status IN ('building', 'pulling', 'ready', 'failed')),
        detail TEXT,
        size_bytes INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        last_used_at INTEGER
      ) STRICT;
      ALTER TABLE sessions ADD COLUMN image_override TEXT;
    `,
  },
  {
    version: 7,
    description: "secrets granted to a root session by name (SANDBOX_SECRETS entries with scope granted); never a value",
    sql: `
      CREATE TABLE secret_grants (
        root_session_id TEXT NOT NULL,
        name TEXT NOT NULL,
        granted_at INTEGER NOT NULL,
        PRIMARY KEY (root_session_id, name)
      ) STRICT;
    `,
  },
  {
    version: 8,
    description: "exec history: the last commands of each root session's tree (command, cwd, times, outcome, a tail of the output), trimmed per root",
    sql: `
      CREATE TABLE exec_history (
        id TEXT PRIMARY KEY,
        root_session_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        vm_name TEXT NOT NULL,
        command TEXT NOT NULL,
        cwd TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        duration_ms INTEGER,
        exit_code INTEGER,
        timed_out INTEGER NOT NULL DEFAULT 0,
        cancelled INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        output_tail TEXT NOT NULL DEFAULT '',
        output_bytes INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX exec_history_by_root ON exec_history(root_session_id, id);
    `,
  },
  {
    version: 9,
    description: "a root session's own isolation tier (auto, container, gvisor or microvm), or null when it follows the settings",
    sql: `ALTER TABLE sessions ADD COLUMN isolation_override TEXT CHECK (isolation_override IN ('auto', 'container', 'gvisor', 'microvm'));`,
  },
  {
    version: 10,
    description: "host users with a token of their own (only its SHA-256 is kept), and which user registered each root session",
    sql: `
      CREATE TABLE users (
        name TEXT PRIMARY KEY,
        uid INTEGER NOT NULL UNIQUE,
        gid INTEGER NOT NULL,
        token_sha256 TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE session_owners (
        root_session_id TEXT PRIMARY KEY,
        uid INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX session_owners_by_uid ON session_owners(uid);
    `,
  },
  {
    version: 11,
    description: "whether the kernel killed a command at its VM's memory limit",
    sql: `ALTER TABLE exec_history ADD COLUMN oom_killed INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 12,
    description: "a root session's own docker setting (1 on, 0 off), or null when it follows the settings",
    sql: `ALTER TABLE sessions ADD COLUMN docker_override INTEGER CHECK (docker_override IN (0, 1));`,
  },
];
