// One JSON object per line of a streamed answer (the exec stream, a process's logs), as each line completes.

export async function* ndjsonLines<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  let buffered = "";
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      yield JSON.parse(line) as T;
    }
  }
}
