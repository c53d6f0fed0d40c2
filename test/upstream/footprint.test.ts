import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCheck } from '../../src/commands/check';
import { renderInputs } from '../../src/commands/options';
import { InputError } from '../../src/errors';
import { documentHeads, evaluateExpression, helmFootprint, imageFieldsOfTemplate, imageObjects, kustomizeFootprint, parseTemplate, renderNodes, UNKNOWN_TEXT } from '../../src/upstream';
import { EvalEnv } from '../../src/upstream/go-template';

/** Renders a template against values (and optional helpers), returning the text and the notes. */
function render(src: string, values: Record<string, unknown> = {}, helpers = ''): { text: string; notes: string[]; failures: string[] } {
  const defines = new Map();
  parseTemplate(helpers, defines);
  const { nodes } = parseTemplate(src, defines);
  const root = { Values: values, Release: { Name: 'rel', Namespace: 'ns' }, Chart: { Name: 'c', AppVersion: 'v1.2.3' } };
  const env: EvalEnv = { defines, notes: [], failures: [], file: 't.yaml', depth: 0 };
  const text = renderNodes(nodes, root, env, [new Map([['', root]])]);
  return { text, notes: env.notes, failures: env.failures };
}

describe('Go template evaluation', () => {
  it('evaluates if / else if / else on values, with whitespace trimming', () => {
    const t = '{{- if .Values.a }}A{{- else if .Values.b }}B{{- else }}C{{- end }}';
    expect(render(t, { a: true }).text).toBe('A');
    expect(render(t, { b: 'x' }).text).toBe('B');
    expect(render(t, {}).text).toBe('C');
    expect(render('x  \n  {{- "y" -}}  \n z').text).toBe('xyz');
  });

  it('implements the logic and value functions the pinned charts use', () => {
    const v = { on: true, off: false, s: 'str', n: 3, m: { k: 1 }, l: ['a'], empty: '' };
    const cases: [string, unknown][] = [
      ['not .Values.on', false], ['and .Values.on .Values.off', false], ['or .Values.off .Values.on', true],
      ['eq .Values.s "str"', true], ['ne .Values.s "str"', false], ['.Values.missing | default "d"', 'd'],
      ['.Values.empty | empty', true], ['hasKey .Values.m "k"', true], ['hasKey .Values.m "z"', false],
      ['has "a" .Values.l', true], ['kindIs "bool" .Values.on', true], ['gt (int .Values.n) 1', true],
      ['and (.Values.on) (not (empty .Values.s))', true], ['(fromYaml "a: {b: 2}").a.b', 2],
      ['.Values.missing | default .Chart.AppVersion | quote', 'v1.2.3'], ['contains "tr" .Values.s', true],
    ];
    for (const [expr, want] of cases) expect(evaluateExpression(expr, v, { AppVersion: 'v1.2.3' }), expr).toEqual(want);
  });

  it('walks with, range (lists and maps, with variables) and include', () => {
    expect(render('{{ with .Values.x }}{{ .y }}{{ else }}none{{ end }}', { x: { y: 'Y' } }).text).toBe('Y');
    expect(render('{{ with .Values.x }}{{ .y }}{{ else }}none{{ end }}', {}).text).toBe('none');
    expect(render('{{ range .Values.l }}[{{ . }}]{{ end }}', { l: [1, 2] }).text).toBe('[1][2]');
    expect(render('{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }};{{ end }}', { m: { b: 2, a: 1 } }).text).toBe('a=1;b=2;');
    const helpers = '{{- define "ns" -}}{{- if .Values.nsOverride -}}{{ .Values.nsOverride }}{{- else -}}{{ .Release.Namespace }}{{- end -}}{{- end -}}';
    expect(render('{{ include "ns" . }}', {}, helpers).text).toBe('ns');
    expect(render('{{ include "ns" . }}', { nsOverride: 'other' }, helpers).text).toBe('other');
    expect(render('{{- $x := .Values.a }}{{ if $x }}yes{{ end }}{{ $.Release.Name }}', { a: 1 }).text).toBe('yesrel');
  });

  it('keeps both branches of a condition it cannot evaluate, and says why', () => {
    const r = render('{{ if lookup "v1" "Secret" "ns" "x" }}A{{ else }}B{{ end }}');
    expect(r.text).toBe('AB');
    expect(r.notes).toEqual([expect.stringMatching(/t.yaml: an if condition could not be evaluated \(function lookup is not evaluated\); both branches kept/)]);
    expect(render('{{ .Files.Get "x" | sha256sum }}').text).toBe(UNKNOWN_TEXT);
  });

  it('records a fail the values reach (Helm would refuse to render)', () => {
    expect(render('{{ if .Values.bad }}{{ fail "bad is not allowed" }}{{ end }}', { bad: true }).failures).toEqual(['t.yaml: bad is not allowed']);
    expect(render('{{ if .Values.bad }}{{ fail "bad is not allowed" }}{{ end }}', {}).failures).toEqual([]);
  });
});

describe('document heads', () => {
  it('reads apiVersion, kind, metadata.name/namespace by indentation, not deeper keys', () => {
    const heads = documentHeads([
      'apiVersion: v1', 'kind: ConfigMap', 'metadata:', '  name: a', '  labels:', '    namespace: no', 'data:', '  kind: no',
      '---', '# comment only', '---', 'apiVersion: rbac.authorization.k8s.io/v1', 'kind: RoleBinding', 'metadata:', '  name: "b"', '  namespace: kube-system',
      '---', 'apiVersion: apiextensions.k8s.io/v1', 'kind: CustomResourceDefinition', 'metadata:', '  name: widgets.example.com',
      'spec:', '  group: example.com', '  names:', '    kind: Widget', '  scope: Cluster',
    ].join('\n'));
    expect(heads).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'a' },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', name: 'b', namespace: 'kube-system' },
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: 'widgets.example.com', crd: { group: 'example.com', kind: 'Widget', scope: 'Cluster' } },
    ]);
  });
});

describe('footprint of a chart and of an overlay', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'footprint-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (rel: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  };

  it('renders the documents the values select, subcharts by their condition, and crds/ folders', () => {
    write('chart/Chart.yaml', 'apiVersion: v2\nname: demo\nversion: 1.0.0\ndependencies:\n  - name: sub\n    condition: sub.enabled\n');
    write('chart/values.yaml', 'authReader: true\nrules: true\nsub:\n  enabled: false\n');
    write('chart/templates/_helpers.tpl', '{{- define "demo.fullname" -}}{{ .Release.Name }}-demo{{- end -}}\n');
    write('chart/templates/rb.yaml', '{{- if .Values.authReader }}\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {{ include "demo.fullname" . }}-reader\n  namespace: kube-system\n{{- end }}\n');
    write('chart/templates/sa.yaml', 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ include "demo.fullname" . }}\n---\n{{- if .Values.rules }}\napiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: rules\n{{- end }}\n');
    write('chart/charts/sub/Chart.yaml', 'apiVersion: v2\nname: sub\nversion: 0.1.0\n');
    write('chart/charts/sub/values.yaml', 'enabled: true\n');
    write('chart/charts/sub/templates/ds.yaml', 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: sub\n  namespace: {{ .Release.Namespace }}\n');

    const base = { releaseName: 'r', namespace: 'target', crdsNotVendored: [''] };
    const fp = helmFootprint(path.join(dir, 'chart'), { ...base, values: {} });
    expect(fp.objects.map((o) => [o.kind, o.name ?? '', o.namespace ?? '-', o.scope])).toEqual([
      ['RoleBinding', 'r-demo-reader', 'kube-system', 'Namespaced'],
      ['ServiceAccount', 'r-demo', 'target', 'Namespaced'],
      ['NodeFeatureRule', 'rules', '-', 'Cluster'],
      ['CustomResourceDefinition', '', '-', 'Cluster'],
    ]);
    expect(fp.notes).toEqual([]);
    const off = helmFootprint(path.join(dir, 'chart'), { ...base, values: { authReader: false, rules: false, sub: { enabled: true } } });
    expect(off.objects.map((o) => `${o.kind}/${o.namespace ?? '-'}`)).toEqual(['ServiceAccount/target', 'CustomResourceDefinition/-', 'DaemonSet/target']);
  });

  it('builds a kustomize overlay: namespace transformer, generators, $patch: delete, CRD scopes', () => {
    write('repo/base/kustomization.yaml', 'resources:\n- crd.yaml\n- deploy.yaml\n- crb.yaml\n');
    write('repo/base/crd.yaml', 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: jobs.example.com\nspec:\n  group: example.com\n  names:\n    kind: Job\n  scope: Namespaced\n');
    write('repo/base/deploy.yaml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: op\n  namespace: system\n');
    write('repo/base/crb.yaml', 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: op\n');
    write('repo/overlay/kustomization.yaml', 'namespace: ops\nresources:\n- ../base\n- ns.yaml\nsecretGenerator:\n- name: cert\n');
    write('repo/overlay/ns.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: whatever\n');
    const patches = [{ target: { group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition', name: 'jobs.example.com' }, patch: '$patch: delete\nkind: CustomResourceDefinition\n' }];
    const all = kustomizeFootprint(path.join(dir, 'repo/overlay'), dir, { namespace: 'dest' });
    expect(all.objects.map((o) => `${o.kind} ${o.name} ${o.namespace ?? '-'} ${o.scope}`)).toEqual([
      'CustomResourceDefinition jobs.example.com - Cluster', 'Deployment op ops Namespaced', 'ClusterRoleBinding op - Cluster',
      'Namespace ops - Cluster', 'Secret cert ops Namespaced',
    ]);
    const patched = kustomizeFootprint(path.join(dir, 'repo/overlay'), dir, { namespace: 'dest', patches });
    expect(patched.objects.map((o) => o.kind)).not.toContain('CustomResourceDefinition');
  });
});

describe('image fields of a CR template', () => {
  it('maps CR paths to the values they read, and notes the appVersion fallback', () => {
    const t = [
      'spec:', '  validator:', '    {{- if .Values.validator.repository }}', '    repository: {{ .Values.validator.repository }}', '    {{- end }}',
      '    image: {{ .Values.validator.image }}', '    version: {{ .Values.validator.version | default .Chart.AppVersion | quote }}',
      '  driver:', '    enabled: {{ .Values.driver.enabled }}', '    manager:', '      version: {{ .Values.driver.manager.version | quote }}',
    ].join('\n');
    expect([...imageFieldsOfTemplate(t)]).toEqual([
      ['spec.validator', { valuesPath: 'validator', versionFromAppVersion: true }],
      ['spec.driver.manager', { valuesPath: 'driver.manager', versionFromAppVersion: false }],
    ]);
  });

  it('finds every image coordinate object of a CR spec', () => {
    const spec = { validator: { repository: 'r', image: 'i', version: 'v' }, driver: { enabled: true, manager: { version: 'x' } }, plugin: { image: 'p' }, mig: { strategy: 'single' } };
    expect(imageObjects(spec, 'spec').map((o) => o.path)).toEqual(['spec.validator', 'spec.driver.manager', 'spec.plugin']);
  });
});

describe('--upstream', () => {
  it('an explicit folder that does not exist is bad input for check and for the renders', () => {
    const missing = path.join(tmpdir(), 'no-such-upstream-installs');
    const lines: string[] = [];
    const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
    expect(() => runCheck(['dist', '--upstream', missing], io)).toThrow(InputError);
    expect(() => renderInputs({ 'upstream': missing, 'no-validate': true })).toThrow(/--upstream .*no-such-upstream-installs: no such folder/);
    expect(renderInputs({ 'no-validate': true }).upstream).toBeUndefined();
  });
});
