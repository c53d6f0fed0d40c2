/**
 * Mermaid flowcharts that render on GitHub and GitLab without plugins: plain `flowchart` syntax,
 * node ids of letters, digits and underscores only, every label quoted.
 */

/** A node id from any text: `cq-research` -> `cq_research`; distinct inputs may need a prefix. */
export function nodeId(...parts: readonly string[]): string {
  return parts.map((p) => p.replace(/[^A-Za-z0-9]/g, '_')).join('_');
}

/** A quoted label; `"` becomes `#quot;`, lines join with `<br/>`. */
export function label(...lines: readonly string[]): string {
  return `"${lines.map((l) => l.replace(/"/g, '#quot;')).join('<br/>')}"`;
}

export type Shape = 'box' | 'rounded' | 'stadium';

const SHAPES: Record<Shape, readonly [string, string]> = { box: ['[', ']'], rounded: ['(', ')'], stadium: ['([', '])'] };

/** Builds one flowchart, line by line, in insertion order (deterministic output). */
export class Flowchart {
  private readonly lines: string[] = [];
  private readonly declared = new Set<string>();

  constructor(private readonly direction: 'LR' | 'TD' = 'LR') {}

  node(id: string, text: readonly string[], shape: Shape = 'box', indent = '  '): this {
    if (this.declared.has(id)) return this;
    this.declared.add(id);
    const [open, close] = SHAPES[shape];
    this.lines.push(`${indent}${id}${open}${label(...text)}${close}`);
    return this;
  }

  edge(from: string, to: string, text?: string): this {
    this.lines.push(text === undefined ? `  ${from} --> ${to}` : `  ${from} -->|${label(text)}| ${to}`);
    return this;
  }

  subgraph(id: string, title: string, body: (f: Flowchart) => void): this {
    this.lines.push(`  subgraph ${id}[${label(title)}]`);
    const inner = new Flowchart(this.direction);
    body(inner);
    for (const l of inner.lines) this.lines.push(`  ${l}`);
    inner.declared.forEach((d) => this.declared.add(d));
    this.lines.push('  end');
    return this;
  }

  /** The fenced block, ready for Markdown. */
  toMarkdown(): string {
    return ['```mermaid', `flowchart ${this.direction}`, ...this.lines, '```'].join('\n');
  }
}
