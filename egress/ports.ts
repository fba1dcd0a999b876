// Port parts of allowlist entries: `443` or `8000-8999`, plain numbers within 1-65535.
export type PortRange = { low: number; high: number };

type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const PORTS = /^([1-9]\d{0,4})(?:-([1-9]\d{0,4}))?$/;

export function parsePorts(text: string): Parsed<PortRange> {
  const match = PORTS.exec(text);
  if (!match) return { ok: false, reason: `port ${JSON.stringify(text)} must be a number 1-65535 or a range LOW-HIGH, without leading zeros` };
  const low = Number(match[1]);
  const high = Number(match[2] ?? match[1]);
  if (high > 65535) return { ok: false, reason: `port ${high} is above 65535` };
  if (low > high) return { ok: false, reason: `port range ${low}-${high} is backwards; write ${high}-${low}` };
  return { ok: true, value: { low, high } };
}

export function formatPorts(ports: PortRange): string {
  return ports.low === ports.high ? String(ports.low) : `${ports.low}-${ports.high}`;
}

/** `null` is every port. */
export function portAllowed(ports: PortRange | null, port: number): boolean {
  return ports === null || (port >= ports.low && port <= ports.high);
}
