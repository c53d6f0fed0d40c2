import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { skypilotContext } from '../../src/components/skypilot/client-files';
import { holdsData } from '../../src/model/data-safety';
import { loadModels } from '../../src/model/load-models';
import { LABELS, parseSyncOptions } from '../../src/model/names';
import { Manifest } from '../../src/render/manifest';
import { renderCluster } from '../../src/synth/render';
import { modelOf } from '../helpers';
import { REFERENCE_FILE, ROOT, TRAINING_FILE } from '../paths';

/*
 * What the README and docs/ say of the render is what the render does: the sync waves the quick start names for each
 * folder and the folders it says are synced by hand (read from the training cluster's Applications: every component
 * and install it has), what the rollback recipe says a revert prunes, and the kubeconfig context the SkyPilot steps create.
 */

const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('the README\'s sync waves', () => {
  const [model] = loadModels([TRAINING_FILE]);
  const apps = renderCluster(model).folders.flatMap((f) => f.objects).filter((o): o is Manifest & { spec: Record<string, any> } => o.kind === 'Application');
  const folderOf = (a: Manifest & { spec: Record<string, any> }) => (a.spec.source?.path as string | undefined)?.split('/').pop();
  const waveOf = (a: Manifest) => Number(a.metadata.annotations?.['argocd.argoproj.io/sync-wave'] ?? NaN);
  const ours = apps.filter((a) => a.spec.source?.path?.startsWith(`${model.description.gitops.path}/`) && folderOf(a) !== 'gitops');
  // the quick start's step 5: `wave 0 the managed installs, 1 ... (`argocd`, ...), 2 ... (...), 3 ... (...); the `samples` and `dynamo` folders are synced by hand`
  const step = readme.slice(readme.indexOf('**5. Bootstrap Argo CD**'), readme.indexOf('```', readme.indexOf('**5. Bootstrap Argo CD**')));
  const said = [...step.replace(/\s+/g, ' ').matchAll(/(?:wave |, |\), )(\d) [^()\d]*\(([^)]*)\)/g)].map((m) => ({ wave: Number(m[1]), folders: [...m[2].matchAll(/`([\w-]+)`/g)].map((f) => f[1]) }));
  const byHand = [...(/the (`[\w-]+`(?: and `[\w-]+`)*) folders are synced by hand/.exec(step.replace(/\s+/g, ' '))?.[1] ?? '').matchAll(/`([\w-]+)`/g)].map((m) => m[1]);

  it('names each component folder\'s wave as the render gives it, and every folder the render has', () => {
    expect(said.map((s) => s.wave)).toEqual([1, 2, 3]);
    for (const { wave, folders } of said) {
      for (const folder of folders) {
        const app = ours.find((a) => folderOf(a) === folder);
        expect(app, folder).toBeDefined();
        expect(waveOf(app!), folder).toBe(wave);
      }
    }
    expect([...said.flatMap((s) => s.folders), ...byHand].sort()).toEqual(ours.map(folderOf).sort());
  });

  it('wave 0 is the managed installs; the folders it says are synced by hand have no automated sync', () => {
    expect(step).toMatch(/wave 0 the managed installs/);
    const installs = apps.filter((a) => a.metadata.name.endsWith('-install'));
    expect(installs.length).toBeGreaterThan(0);
    // but the Network Operator's: its NodeFeatureRule needs the NFD CRDs of the GPU Operator's install, a wave before
    for (const a of installs) expect(waveOf(a), a.metadata.name).toBe(a.metadata.name.endsWith('-network-operator-install') ? 1 : 0);
    expect(step.replace(/\s+/g, ' ')).toMatch(/, 1 [^()\d]*the Network Operator's install/);
    expect(byHand.sort()).toEqual(['dynamo', 'samples']);
    for (const folder of byHand) expect(ours.find((a) => folderOf(a) === folder)?.spec.syncPolicy?.automated, folder).toBeUndefined();
    for (const a of ours.filter((x) => !byHand.includes(folderOf(x)!))) expect(a.spec.syncPolicy?.automated, a.metadata.name).toBeDefined();
  });
});

describe('the README\'s rollback recipe', () => {
  const recipe = readme.slice(readme.indexOf('### Roll back a change'), readme.indexOf('\n### ', readme.indexOf('### Roll back a change') + 1)).replace(/\s+/g, ' ');

  it('what a revert prunes only after confirmation, and what never, is marked so in the render of a pre-installed cluster', () => {
    // CRDs: Argo CD tracks none (test/cluster/gitops-waves.test.ts, a CRD and its custom resources)
    expect(recipe).toMatch(/a Namespace or volume claim after \*Confirm Pruning\*; adopted objects and CRDs never \(Argo CD owns no CRD\)/);
    const objects = renderCluster(loadModels([REFERENCE_FILE])[0]).folders.flatMap((f) => f.objects);
    const options = (o: Manifest) => parseSyncOptions(o.metadata.annotations?.[LABELS.syncOptions]);
    const adopted = objects.filter((o) => o.metadata.annotations?.[LABELS.adopted] === 'true');
    const data = objects.filter((o) => holdsData(o) && !adopted.includes(o));
    expect(adopted.length).toBeGreaterThan(0);
    for (const o of adopted) expect(options(o), `${o.kind} ${o.metadata.name}`).toEqual(expect.arrayContaining(['Prune=false', 'Delete=false']));
    // confirm, or never (Argo CD's own Namespace)
    for (const o of data) expect(options(o).filter((x) => /^(Prune|Delete)=/.test(x)).sort(), `${o.kind} ${o.metadata.name}`).toSatisfy((x: string[]) => ['Delete=confirm,Prune=confirm', 'Delete=false,Prune=false'].includes(x.join(',')));
    expect(data.filter((o) => options(o).includes('Prune=confirm')).map((o) => o.kind)).toContain('Namespace');
  });
});

describe('the SkyPilot steps of docs/components/tutorials.md', () => {
  const doc = readFileSync(path.join(ROOT, 'docs', 'components', 'tutorials.md'), 'utf8');

  it('create the context the rendered config.yaml allows, for the cluster whose dist/ folder they copy from', () => {
    const context = /kubectl config set-context (\S+) /.exec(doc)?.[1];
    const clusters = [...doc.matchAll(/dist\/([\w-]+)\/tutorials\/skypilot\//g)].map((m) => m[1]);
    expect(clusters.length).toBeGreaterThan(0);
    expect(new Set(clusters).size).toBe(1);
    // a cluster of that name, the tutorials on, the context left to its default
    const model = modelOf((d) => {
      d.name = clusters[0];
      d.tutorials = { skypilot: { enabled: true } };
    });
    expect(context).toBe(skypilotContext(model));
  });
});
