import { Construct } from 'constructs';
import { formatProvides, GroupKind } from './api-kinds';
import { IgnoredDifference } from './managed-installs';
import { CHILD_RETRY, CLIENT_SIDE_APPLY_MIGRATION_MANAGER, RetryPolicy, SERVER_SIDE_APPLY } from './plan';
import { Application, ApplicationSpecSource } from '../../../imports/argocd-application-argoproj.io';
import { LABELS, RESOURCES_FINALIZER } from '../../model/names';

export interface GitopsApplicationProps {
  /** Application name (unique in the Argo CD namespace). */
  readonly name: string;
  /** Namespace Argo CD runs in. */
  readonly namespace: string;
  /** AppProject the Application belongs to. */
  readonly project: string;
  readonly source: ApplicationSpecSource;
  /** API server the objects go to. */
  readonly destinationServer: string;
  /** Namespace for objects that carry none (every rendered object carries one; it must be a permitted destination). */
  readonly destinationNamespace: string;
  /**
   * Sync wave among the Applications of the root.
   * @default - none (wave 0)
   */
  readonly wave?: number;
  /**
   * Automated sync; undefined: synced by hand.
   * @default - synced by hand
   */
  readonly automated?: { readonly prune: boolean; readonly selfHeal: boolean };
  /**
   * How a failed automated sync is retried (plan.ts ROOT_RETRY, CHILD_RETRY); with `automated` only.
   * @default CHILD_RETRY
   */
  readonly retry?: RetryPolicy;
  /**
   * The longest its parent's sync waves wait on it when it does not get Healthy, in seconds (annotation LABELS.waveWait,
   * which the Application health check reads).
   * @default - none: its parent waits as long as it takes
   */
  readonly waveWaitSeconds?: number;
  /**
   * Sync options (`ServerSideApply=true`, `SkipDryRunOnMissingResource=true`, `CreateNamespace=true`).
   * @default []
   */
  readonly syncOptions?: readonly string[];
  /**
   * Diff server-side, so that fields the API server defaults (CRD defaults, webhooks) show no drift. Only with
   * `ServerSideApply=true` in syncOptions: a client-side apply's fields are invisible to the server-side diff, which then
   * never sees a field dropped from Git (plan.ts SERVER_SIDE_APPLY).
   * @default false
   */
  readonly serverSideDiff?: boolean;
  /**
   * Delete the Application's resources with it.
   * @default false
   */
  readonly finalizer?: boolean;
  /**
   * Fields an operator writes; each entry says why in `why` (not rendered).
   * @default []
   */
  readonly ignoreDifferences?: readonly IgnoredDifference[];
  /**
   * Labels of the namespace Argo CD creates (with `CreateNamespace=true`).
   * @default {}
   */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  /**
   * API kinds the Application installs, recorded in an annotation for the wave check.
   * @default []
   */
  readonly provides?: readonly GroupKind[];
  /**
   * Applied by hand only (LABELS.byHand): outside the root's kustomization, so the root Application's
   * health never waits for it.
   * @default false
   */
  readonly byHand?: boolean;
}

/** One Argo CD Application of a cluster, with its wave, sync policy and diff options. */
export class GitopsApplication extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: GitopsApplicationProps) {
    super(scope, id);
    this.name = props.name;
    const syncOptions = [...(props.syncOptions ?? [])];
    const ignoreDifferences = (props.ignoreDifferences ?? []).map(({ why: _why, ...rest }) => rest);
    const namespaceLabels = props.namespaceLabels ?? {};
    const provides = props.provides ?? [];
    const wait = props.waveWaitSeconds;
    if (wait !== undefined && !(Number.isSafeInteger(wait) && wait > 0)) throw new Error(`GitopsApplication ${props.name}: waveWaitSeconds must be a positive whole number, got ${wait}`);
    if (props.serverSideDiff && !syncOptions.includes(SERVER_SIDE_APPLY)) throw new Error(`GitopsApplication ${props.name}: serverSideDiff needs ${SERVER_SIDE_APPLY} in syncOptions (a server-side diff does not see a field dropped from Git that a client-side apply wrote)`);
    if (props.retry && !props.automated) throw new Error(`GitopsApplication ${props.name}: retry needs automated (a sync by hand is retried by hand)`);
    const annotations: Record<string, string> = {
      ...(props.wave !== undefined ? { [LABELS.syncWave]: String(props.wave) } : {}),
      ...(props.serverSideDiff ? { [LABELS.compareOptions]: 'ServerSideDiff=true' } : {}),
      ...(syncOptions.includes(SERVER_SIDE_APPLY) ? { [LABELS.clientSideApplyMigrationManager]: CLIENT_SIDE_APPLY_MIGRATION_MANAGER } : {}),
      ...(provides.length > 0 ? { [LABELS.provides]: formatProvides(provides) } : {}),
      ...(props.byHand ? { [LABELS.byHand]: 'true' } : {}),
      ...(wait !== undefined ? { [LABELS.waveWait]: String(wait) } : {}),
    };
    const retry = props.retry ?? CHILD_RETRY;

    new Application(this, 'Resource', {
      metadata: {
        name: props.name,
        namespace: props.namespace,
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        ...(props.finalizer ? { finalizers: [RESOURCES_FINALIZER] } : {}),
      },
      spec: {
        project: props.project,
        source: props.source,
        destination: { server: props.destinationServer, namespace: props.destinationNamespace },
        ...(ignoreDifferences.length > 0 ? { ignoreDifferences } : {}),
        syncPolicy: {
          ...(props.automated
            ? { automated: { prune: props.automated.prune, selfHeal: props.automated.selfHeal }, retry: { ...retry, backoff: { ...retry.backoff } } }
            : {}),
          ...(syncOptions.length > 0 ? { syncOptions } : {}),
          ...(Object.keys(namespaceLabels).length > 0 ? { managedNamespaceMetadata: { labels: { ...namespaceLabels } } } : {}),
        },
      },
    });
  }
}
