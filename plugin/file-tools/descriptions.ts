// What the model is told about the file tools: the same contract as OpenCode's built-in tools (argument
// names, output shapes, limits, read-before-write), plus where they run in a sandboxed session.
const WHERE =
  "When this session is sandboxed, this tool works inside the session's sandbox VM and sees exactly what its commands see: the repository at the same absolute path, nothing else of the host (symlinks resolve inside the VM).";

export const READ_DESCRIPTION = `Reads a file or a directory. A path that does not exist is an error.
- filePath should be absolute.
- Returns at most 2000 lines from the start of the file by default; offset is the 1-indexed line to start from, limit the number of lines. Read later parts by calling again with a larger offset, and prefer one larger window over many small slices.
- Each line comes back prefixed with its number as \`<line>: <content>\`; a file containing "foo\\n" gives "1: foo". Lines longer than 2000 characters are cut, and the output stops before 50 KB with a note saying which offset to continue from.
- A directory comes back as one entry per line, with a trailing \`/\` on subdirectories.
- Images and PDFs are returned as attachments; other binary files are refused.
- Use grep to find content in large files and glob to find file names. Read several files in parallel when you know which.
${WHERE}`;

export const WRITE_DESCRIPTION = `Writes a file, replacing it if it exists and creating missing parent directories.
- To overwrite an existing file you MUST read it with the read tool first in this session; the write fails otherwise, or if the file changed since you read it.
- Prefer editing existing files. Do not create new files, documentation or README files unless asked, and do not add emojis unless asked.
${WHERE}`;

export const EDIT_DESCRIPTION = `Replaces text in a file.
- You must read the file with the read tool in this session before editing it; the edit fails otherwise, or if the file changed since you read it.
- Copy oldString from the read output exactly as it appears AFTER the line number prefix (number, colon, space, e.g. \`1: \`); never include any part of that prefix in oldString or newString, and keep the exact indentation.
- The edit fails with "Could not find oldString in the file" when oldString is not there, and with "Found multiple matches for oldString" when it is there more than once: give more surrounding lines to make it unique, or set replaceAll to change every occurrence (e.g. to rename a variable).
- An empty oldString creates a new file with newString as its content; it is refused for an existing file.
- Prefer editing existing files to creating new ones; do not add emojis unless asked.
${WHERE}`;

export const GLOB_DESCRIPTION = `Finds files by name pattern, in any size of codebase.
- Supports glob patterns like "**/*.js" or "src/**/*.ts"; a pattern without "/" matches file names at any depth.
- Returns matching file paths (at most 100). Files ignored by git and hidden files are skipped.
- For open-ended searches that need several rounds of globbing and grepping, use the task tool instead. Several speculative searches can be made in parallel.
${WHERE}`;

export const GREP_DESCRIPTION = `Searches file contents with a regular expression, in any size of codebase.
- Full regex syntax (e.g. "log.*Error", "function\\s+\\w+").
- Filter files with include (e.g. "*.js", "*.{ts,tsx}").
- Returns file paths with the line numbers and text of matching lines (at most 100 matches). Files ignored by git and binary files are skipped.
- To count matches, use the bash tool. For open-ended searches that need several rounds, use the task tool instead.
${WHERE}`;

export const APPLY_PATCH_DESCRIPTION = `Edits files with a patch. The patch is a file-oriented envelope:
*** Begin Patch
[ one or more file sections ]
*** End Patch
Each file section starts with one of these headers:
*** Add File: <path> - creates a new file; every following line is a + line with its content.
*** Delete File: <path> - removes an existing file; nothing follows.
*** Update File: <path> - changes an existing file, optionally renaming it with a "*** Move to: <path>" line right after the header.
An update has one or more chunks, each starting with "@@" (optionally followed by a line of the file that precedes the change), then lines starting with " " (unchanged context), "-" (removed) or "+" (added).
Example:
*** Begin Patch
*** Add File: hello.txt
+Hello world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-print("Hi")
+print("Hello, world!")
*** Delete File: obsolete.txt
*** End Patch
Always include a header for every action, and prefix new lines with + even when creating a file.
${WHERE}`;
