/** @jsxImportSource preact */
// A line chart of the last minutes of one series, in plain SVG: two series on one page need no chart
// library (nothing to bundle or load, nothing the strict CSP must allow), and a text alternative says the
// latest value and the range for screen readers.

type SparklineProps = { label: string; unit: string; values: number[]; max: number };

const WIDTH = 300;
const HEIGHT = 60;

export function Sparkline({ label, unit, values, max }: SparklineProps) {
  const top = Math.max(max, ...values, 1);
  const step = values.length > 1 ? WIDTH / (values.length - 1) : 0;
  const points = values.map((value, i) => `${(i * step).toFixed(1)},${(HEIGHT - (value / top) * HEIGHT).toFixed(1)}`).join(" ");
  const latest = values.at(-1);
  const summary = latest === undefined ? `${label}: no reading yet` : `${label}: ${latest.toFixed(1)} ${unit} now, ${Math.min(...values).toFixed(1)} to ${Math.max(...values).toFixed(1)} over the last ${values.length} readings`;
  return (
    <figure class="chart">
      <figcaption>
        {label}: <strong>{latest === undefined ? "—" : `${latest.toFixed(1)} ${unit}`}</strong>
      </figcaption>
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label={summary} data-points={values.length}>
        <polyline points={points} fill="none" stroke="currentColor" stroke-width="2" vector-effect="non-scaling-stroke" />
      </svg>
    </figure>
  );
}
