// What a failed test file said about its failures, for the end of a run's summary: CI keeps only the
// tail of a long log, and a summary that names a file without the reason sends the reader to a rerun.

const MAX_LINES_PER_FAILURE = 40;
const TAIL_LINES_WITHOUT_A_FAILED_TEST = 30;
const RESULT_LINE = /^\((pass|fail|skip|todo)\) /;

/**
 * Each "(fail)" line of a `bun test` output with the lines bun printed for it just before (source excerpt,
 * error, stack), at most MAX_LINES_PER_FAILURE each. A file that failed outside any test (a crash, a hook,
 * a timeout of the whole file) has no "(fail)" line: then its last lines.
 */
export function failureExcerpts(output: string): string[] {
  const lines = output.trimEnd().split("\n");
  const excerpts: string[] = [];
  let blockStart = 0;
  for (const [index, line] of lines.entries()) {
    if (!RESULT_LINE.test(line)) continue;
    if (line.startsWith("(fail) ")) excerpts.push(lines.slice(Math.max(blockStart, index - MAX_LINES_PER_FAILURE), index + 1).join("\n"));
    blockStart = index + 1;
  }
  if (excerpts.length === 0) excerpts.push(lines.slice(-TAIL_LINES_WITHOUT_A_FAILED_TEST).join("\n"));
  return excerpts;
}
