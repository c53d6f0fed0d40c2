/** Markdown helpers of the cluster report. */

function cell(v: string | number): string {
  return String(v).replace(/\|/g, '\\|');
}

/** A Markdown table. */
export function table(head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  return [
    `| ${head.map(cell).join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

/** Inline code. */
export const code = (s: string | number): string => `\`${s}\``;
