import { code, table } from './markdown';
import { ClusterIndex } from '../check/cluster-index';
import { GITOPS_FOLDER, rootApplicationOf } from '../components/gitops/plan';
import { DELETION_APPROVED_NOW, LABELS, ownSyncOptions, syncOptionValue } from '../model/names';
import { durationSeconds } from '../model/schema-types';
import { Manifest, RenderedCluster } from '../render/manifest';

/** What the report says of one Application the root syncs. */
interface Child {
  readonly name: string;
  readonly wave: number;
  readonly waitSeconds?: number;
}

interface SyncPolicyView {
  readonly automated?: { readonly prune?: boolean; readonly selfHeal?: boolean };
  readonly retry?: {
    readonly limit?: number;
    readonly backoff?: { readonly duration?: string; readonly factor?: number; readonly maxDuration?: string };
  };
}

const policyOf = (a: Manifest): SyncPolicyView => ((a.spec as { syncPolicy?: SyncPolicyView } | undefined)?.syncPolicy ?? {});

/** How long a retry policy retries, in seconds: each wait the backoff's duration times its factor after each retry, at most maxDuration. */
function retrySeconds(retry: NonNullable<SyncPolicyView['retry']>): number | undefined {
  const limit = retry.limit ?? 0;
  if (limit < 0) return undefined;
  const first = durationSeconds(retry.backoff?.duration ?? '5s');
  const max = retry.backoff?.maxDuration ? durationSeconds(retry.backoff.maxDuration) : Infinity;
  let total = 0;
  for (let i = 0; i < limit; i++) total += Math.min(first * (retry.backoff?.factor ?? 2) ** i, max);
  return total;
}

/** A wait in seconds as people read it (600 -> "10m", 90 -> "1m30s"). */
function readable(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s || seconds === 0 ? `${s}s` : ''}`;
}

/**
 * What holds the sync waves of the root Application and what does not, and the escape hatches: each an `argocd`
 * command with this cluster's Application names (the cluster tests run them on a real Argo CD, as printed). Every name,
 * wave, bound and option comes from the rendered gitops objects.
 */
export function stuckWavesSection(c: RenderedCluster, index: ClusterIndex): string {
  const objects = index.ofKind('Application', 'argoproj.io').filter((a) => index.folderOf(a) === GITOPS_FOLDER);
  const root = rootApplicationOf(objects, c.model.description.gitops.path.replace(/\/+$/, ''));
  if (!root) return 'No root Application is rendered for this cluster: nothing syncs in waves.';
  const children: Child[] = objects
    .filter((a) => a !== root && a.metadata.annotations?.[LABELS.byHand] !== 'true')
    .map((a) => {
      const wait = Number(a.metadata.annotations?.[LABELS.waveWait]);
      const wave = Number(a.metadata.annotations?.[LABELS.syncWave] ?? 0) || 0;
      return { name: a.metadata.name, wave, waitSeconds: Number.isFinite(wait) && wait > 0 ? wait : undefined };
    })
    .sort((a, b) => a.wave - b.wave || (a.name < b.name ? -1 : 1));
  if (children.length === 0) return `The root Application ${code(root.metadata.name)} syncs no other Application: nothing waits in waves.`;
  const rootName = root.metadata.name;
  const argocd = root.metadata.namespace ?? c.model.description.gitops.namespace;
  const waits = [...new Set(children.map((a) => a.waitSeconds).filter((w): w is number => w !== undefined))];
  const bound = waits.length === 1 ? `${readable(waits[0])} (${code('gitops.waveWait')})` : `${code('gitops.waveWait')}`;
  const synced = objects.filter((a) => children.some((x) => x.name === a.metadata.name));
  const pruneOff = [root, ...synced].some((a) => policyOf(a).automated?.prune === false);
  const childRetry = synced.map((a) => policyOf(a).retry).find((r) => r !== undefined);
  const retryFor = childRetry && retrySeconds(childRetry);
  const waves = [...new Set(children.map((a) => a.wave))];
  const names = children.map((a) => a.name);
  // Namespaces and volume claims (Prune=confirm, model/data-safety.ts) a commit removes are pruned only once someone
  // confirms: the sync of their Application waits for it ("waiting for pruning confirmation")
  const confirmFolders = new Set(index.objects.filter((m) => syncOptionValue(ownSyncOptions(m), 'Prune') === 'confirm').map((m) => index.folderOf(m)));
  const confirming = synced.filter((a) => confirmFolders.has(((a.spec as { source?: { path?: string } } | undefined)?.source?.path ?? '').split('/').pop()))
    .map((a) => a.metadata.name);

  return [
    `The root Application ${code(rootName)} syncs the Applications of ${code(`${c.model.description.gitops.path}/${GITOPS_FOLDER}`)} wave by wave: a wave starts when `
      + 'every Application of the waves before has synced the commit the root gave it and is Healthy, or has stopped holding the waves:',
    '',
    `- **Not Healthy after ${bound}.** An Application still Progressing (an operand roll that hangs, or a GPU node NotReady where the GPU Operator's operands `
      + 'tolerate its taints, keeps the ClusterPolicy not ready), '
      + 'Degraded or Missing that long after its last sync finished, or whose own sync has run that long, no longer holds the waves after it: the root\'s '
      + 'Application health check reports it Healthy, saying what it really is, and the waves go on. So a commit reaches each Application after at most that '
      + 'bound for each wave before it, plus the time Argo CD takes to look again (its reconciliation period, 3 minutes by default), and the root\'s sync '
      + 'ends, free to take the next commit. An Application that has been unhealthy for longer than the bound since its last sync holds nothing at all.',
    '- **Suspended** (a ClusterQueue held by its `stopPolicy`, and its LocalQueues) never holds the waves.',
    '- **A failed sync of the commit an Application was given** (the API server refused an object) holds the waves after it: the root shows that '
      + 'Application Degraded with the API server\'s message, and its sync fails and retries for as long as it takes, each retry taking the newest commit of '
      + `${code(c.model.description.gitops.targetRevision)}: the commit that fixes it recovers by itself. The Application retries its own failed sync `
      + `${childRetry?.limit !== undefined && retryFor !== undefined ? `${childRetry.limit} times (for ${readable(retryFor)}) ` : ''}first, and syncs the next commit it `
      + 'is given once those retries end.',
    ...(pruneOff
      ? ['- **Objects a commit removes stay** (`gitops.automated.prune: false`): Argo CD starts no automated sync that would only delete, and nothing '
        + 'waits for one. Delete them with a sync by hand, below.']
      : []),
    '',
    'The escape hatches, with the `argocd` CLI logged in to the Argo CD that runs these Applications (for example `argocd login --core`, which uses your '
      + `kubeconfig, its current namespace ${code(argocd)}):`,
    '',
    '```sh',
    `argocd app get ${rootName}   # what the root's sync waits for, and why`,
    `argocd app terminate-op ${rootName}   # end the root's sync now: it syncs the newest commit at once (a revert need not wait for the bound)`,
    `argocd app sync ${rootName} --async --retry-limit -1 --retry-refresh   # sync the root again, retrying as its automated sync does (after terminate-op, when no newer commit came)`,
    '# end an Application\'s own sync that hangs (a hook that never completes) or its retries of an older commit:',
    ...names.map((n) => `argocd app terminate-op ${n}`),
    '# sync an Application again at the commit it was given, once what made its sync fail has passed:',
    ...names.map((n) => `argocd app sync ${n}`),
    ...(pruneOff ? ['# delete what a commit removed from its folder (automated.prune is off):', ...names.map((n) => `argocd app sync ${n} --prune`)] : []),
    ...(confirming.length > 0
      ? ['# let its sync delete the Namespaces and volume claims a commit removed (Prune=confirm: it waits for this):', ...confirming.map((n) => `argocd app confirm-deletion ${n}`)]
      : []),
    `# roll one Application out ahead of a failing wave before it (terminate-op ${rootName} first):`,
    ...children.filter((a) => a.wave > children[0].wave).map((a) => `argocd app sync ${rootName} --resource argoproj.io:Application:${a.name}   # wave ${a.wave}`),
    '```',
    '',
    'The Applications the root syncs, by wave:',
    '',
    table(['Wave', 'Applications'], waves.map((w) => [w, children.filter((a) => a.wave === w).map((a) => code(a.name)).join(', ')])),
    ...(confirming.length > 0
      ? ['', `A commit that removes a Namespace or a volume claim (a tenant's) leaves the sync of ${confirming.map(code).join(' or ')} at "waiting for pruning `
        + 'confirmation" until someone confirms, with `argocd app confirm-deletion` above or with:',
      '',
      '```sh',
      ...confirming.map((n) => `kubectl annotate application -n ${argocd} ${n} ${DELETION_APPROVED_NOW}`),
      '```',
      '',
      'Nothing with data goes unasked.']
      : []),
  ].join('\n');
}
