/**
 * Kubernetes resource quantities: parsing, and formatting in the canonical form the API server
 * stores (so that Argo CD sees no drift after the server round-trips a value).
 */

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { 'n': 1e-9, 'u': 1e-6, 'm': 1e-3, '': 1, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15, 'E': 1e18 };
const QUANTITY = /^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/;

/** Parses a quantity (`"192"`, `"500m"`, `"1800Gi"`, `1e3`) into base units (cores, bytes). */
export function parseQuantity(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`invalid quantity ${value}`);
    return value;
  }
  const m = QUANTITY.exec(value.trim());
  if (!m) throw new Error(`invalid quantity "${value}"`);
  const num = Number(m[1]);
  const suffix = m[2] ?? '';
  if (suffix in BINARY) return num * BINARY[suffix];
  if (suffix in DECIMAL) return num * DECIMAL[suffix];
  return num * 10 ** Number(suffix.slice(1));
}

/** A quantity in thousandths of its unit, rounded (`"500m"` -> 500, `"2"` -> 2000): CPU in millicores. */
export function parseMillis(value: string | number): number {
  return Math.round(parseQuantity(value) * 1000);
}

/** Canonical decimal-SI form of a value given in thousandths (`2000000` -> `"2k"`, `1500` -> `"1500m"`). */
export function formatMillis(millis: number): string {
  if (!Number.isInteger(millis) || millis < 0) throw new Error(`cannot format ${millis} thousandths as a quantity`);
  if (millis === 0) return '0';
  const suffixes: Array<[string, number]> = [['E', 21], ['P', 18], ['T', 15], ['G', 12], ['M', 9], ['k', 6], ['', 3], ['m', 0]];
  for (const [suffix, exp] of suffixes) {
    const unit = 10 ** exp;
    if (millis % unit === 0) return `${millis / unit}${suffix}`;
  }
  return `${millis}m`;
}

/** Canonical form of a CPU amount in cores (`96` -> `"96"`, `0.5` -> `"500m"`). Rounds down to whole millicores. */
export function formatCpu(cores: number): string {
  return formatMillis(Math.floor(cores * 1000 + 1e-6));
}

/** Canonical binary-SI form of a byte count (`1932735283200` -> `"1800Gi"`). */
export function formatBytes(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 0) throw new Error(`cannot format ${bytes} bytes as a quantity`);
  if (bytes === 0) return '0';
  for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
    if (bytes % BINARY[suffix] === 0) return `${bytes / BINARY[suffix]}${suffix}`;
  }
  // Decimal form from whole bytes: bytes * 1000 would pass 2^53 for large counts and lose digits.
  for (const [suffix, exp] of [['E', 18], ['P', 15], ['T', 12], ['G', 9], ['M', 6], ['k', 3]] as const) {
    if (bytes % 10 ** exp === 0) return `${bytes / 10 ** exp}${suffix}`;
  }
  return String(bytes);
}

/** Rounds a byte count down to whole MiB, so that it formats with a binary suffix. */
export function floorToMebibytes(bytes: number): number {
  return Math.floor(bytes / BINARY.Mi) * BINARY.Mi;
}

/** A value as an exact fraction (numerator, denominator > 0). */
interface Fraction {
  readonly n: bigint;
  readonly d: bigint;
}

/** The factor of a quantity's suffix, exactly (`Mi` 2^20, `m` 1/1000, `e3` 1000). */
function suffixFactor(suffix: string): Fraction {
  if (suffix in BINARY) return { n: 2n ** BigInt(Math.log2(BINARY[suffix])), d: 1n };
  const exp = suffix in DECIMAL ? Math.round(Math.log10(DECIMAL[suffix])) : Number(suffix.slice(1));
  return exp >= 0 ? { n: 10n ** BigInt(exp), d: 1n } : { n: 1n, d: 10n ** BigInt(-exp) };
}

/** A quantity written as text (or a JSON number), exactly: its value in base units and its suffix; undefined when it is none. */
function exactQuantity(value: string | number): { value: Fraction; suffix: string } | undefined {
  const m = QUANTITY.exec(typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value);
  // exponents past what any resource needs are left alone (a version string, a huge literal)
  if (!m || (m[2] !== undefined && /^[eE]/.test(m[2]) && Math.abs(Number(m[2].slice(1))) > 30)) return undefined;
  const [whole, fraction = ''] = m[1].replace(/^\+/, '').split('.');
  const sign = whole.startsWith('-') ? -1n : 1n;
  const digits = `${whole.replace('-', '')}${fraction}` || '0';
  const suffix = m[2] ?? '';
  const factor = suffixFactor(suffix);
  return { value: { n: sign * BigInt(digits) * factor.n, d: 10n ** BigInt(fraction.length) * factor.d }, suffix };
}

/** `value` in units of `unit` with at most three decimals (`275.001`), or undefined when it needs more. */
function decimalIn(value: Fraction, unit: Fraction): string | undefined {
  const n = value.n * unit.d * 1000n;
  const d = value.d * unit.n;
  if (n % d !== 0n) return undefined;
  const millis = n / d;
  const abs = millis < 0n ? -millis : millis;
  const fraction = String(abs % 1000n).padStart(3, '0').replace(/0+$/, '');
  return `${millis < 0n ? '-' : ''}${abs / 1000n}${fraction ? `.${fraction}` : ''}`;
}

/**
 * The sum of quantities as written (`"344"` and `"1"`: `"345"`; `"3240Gi"` and `"2Gi"`: `"3242Gi"`; `"1500m"` and
 * `"3"`: `"4500m"`): one as it is written; several in the coarsest of their units (or base units) where the sum is
 * whole, else where it has at most three decimals. Undefined when one is no quantity, or none is given.
 */
export function sumAsWritten(values: readonly (string | number)[]): string | undefined {
  const parsed = values.map(exactQuantity);
  if (parsed.length === 0 || parsed.some((q) => q === undefined)) return undefined;
  if (values.length === 1) return String(values[0]);
  const sum = parsed.reduce((t: Fraction, q) => ({ n: t.n * q!.value.d + q!.value.n * t.d, d: t.d * q!.value.d }), { n: 0n, d: 1n });
  const units = [...new Set(parsed.map((q) => q!.suffix)), ''].map((suffix) => ({ suffix, factor: suffixFactor(suffix) }))
    .sort((u, v) => (u.factor.n * v.factor.d > v.factor.n * u.factor.d ? -1 : 1));
  const inUnits = units.map(({ suffix, factor }) => ({ suffix, p: decimalIn(sum, factor) })).filter((u) => u.p !== undefined);
  const best = inUnits.find((u) => !u.p!.includes('.')) ?? inUnits[0];
  return best ? `${best.p}${best.suffix}` : undefined;
}

/**
 * Two quantities written in different units (`"570"` and `"281001m"`, `"2Gi"` and `"2049Mi"`), both in one of those
 * units, the coarser where both are exact in it with at most three decimals (`570` and `281.001`; `2048Mi` and
 * `2049Mi`), else in base units. Undefined when both are written in the same unit, or either is no quantity.
 */
export function inOneUnit(a: unknown, b: unknown): [string, string] | undefined {
  if ((typeof a !== 'string' && typeof a !== 'number') || (typeof b !== 'string' && typeof b !== 'number')) return undefined;
  const x = exactQuantity(a);
  const y = exactQuantity(b);
  if (!x || !y || x.suffix === y.suffix) return undefined;
  // the base unit last: both are exact in it as soon as they are whole bytes or thousandths of a core (`1G`, `1Gi`)
  const units = [...[x.suffix, y.suffix].map((suffix) => ({ suffix, factor: suffixFactor(suffix) }))
    .sort((u, v) => (u.factor.n * v.factor.d > v.factor.n * u.factor.d ? -1 : 1)), { suffix: '', factor: { n: 1n, d: 1n } }];
  for (const { suffix, factor } of units) {
    const [p, q] = [decimalIn(x.value, factor), decimalIn(y.value, factor)];
    if (p !== undefined && q !== undefined) return [`${p}${suffix}`, `${q}${suffix}`];
  }
  return undefined;
}

/** A quantity in billionths of its unit, exactly (a finer remainder dropped), or undefined when it is none. */
export function quantityNanos(value: string | number): bigint | undefined {
  const q = exactQuantity(value);
  return q === undefined ? undefined : (q.value.n * 1_000_000_000n) / q.value.d;
}
