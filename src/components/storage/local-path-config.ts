import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { stringify } from 'yaml';
import { ContentMemo, exactJsonKey } from '../../cache/content-memo';
import { TolerationSpec } from '../../model/model';
import { SINGLETONS } from '../../model/names';

/** How one StorageClass of the local-path-provisioner stores its volumes. */
export type LocalPathClassConfig =
  /** A folder on every node (ReadWriteOnce, node-local). */
  | { readonly nodePath: string }
  /** A folder on a filesystem mounted on every node (ReadWriteMany). */
  | { readonly sharedFileSystemPath: string };

export interface LocalPathConfigProps {
  /** Namespace of the provisioner. */
  readonly namespace: string;
  /** StorageClass name -> where its volumes live. */
  readonly storageClasses: Readonly<Record<string, LocalPathClassConfig>>;
  /**
   * Image of the helper pod that creates and deletes volume folders.
   * @default the provisioner's upstream busybox
   */
  readonly helperImage: string;
  /**
   * Tolerations of the helper pod, besides disk pressure. A helper of a node-local class is pinned to its node
   * (only NoExecute taints apply), but a shared-filesystem class's helper is not pinned in v0.0.37: it goes
   * through the scheduler with these tolerations only, so on a cluster whose every node is tainted they must
   * cover some node's taints or shared claims never bind.
   * @default [] (disk pressure only, as upstream)
   */
  readonly helperTolerations?: readonly TolerationSpec[];
  /**
   * ConfigMap name; the provisioner reads exactly this one.
   * @default "local-path-config"
   */
  readonly name?: string;
}

/** The helper pod's YAML text by its content: every cluster of a fleet writes the same one. */
const helperPodTexts = new ContentMemo<string>(256 * 1024);
const helperPodYaml = (pod: Record<string, unknown>): string => (
  helperPodTexts.get(exactJsonKey(pod), () => stringify(pod, { indent: 2, indentSeq: true, lineWidth: 0 })));

/** Node in nodePathMap that applies to every node not listed. */
const ALL_NODES = 'DEFAULT_PATH_FOR_NON_LISTED_NODES';

/**
 * The local-path-provisioner configuration: `config.json` with one `storageClassConfigs` entry per
 * StorageClass (top-level `nodePathMap` empty, as upstream requires with shared paths), and the
 * setup/teardown scripts and helper pod the provisioner runs to create and remove volume folders.
 */
export class LocalPathConfig extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: LocalPathConfigProps) {
    super(scope, id);
    this.name = props.name ?? SINGLETONS.localPathConfig;
    const names = Object.keys(props.storageClasses);
    if (names.length === 0) throw new Error('LocalPathConfig: storageClasses must name at least one StorageClass');

    const storageClassConfigs: Record<string, unknown> = {};
    for (const name of names.sort()) {
      const c = props.storageClasses[name];
      storageClassConfigs[name] = 'nodePath' in c
        ? { nodePathMap: [{ node: ALL_NODES, paths: [c.nodePath] }] }
        : { sharedFileSystemPath: c.sharedFileSystemPath, nodePathMap: [] };
    }
    const config = { nodePathMap: [], storageClassConfigs };

    // The provisioner uses the template's tolerations as they are when it sets any (upstream's default is
    // disk pressure only), so disk pressure stays in the list.
    const tolerations: TolerationSpec[] = [
      { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
      ...(props.helperTolerations ?? []).map((t) => ({ ...t })),
    ];
    const helperPod = helperPodYaml({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'helper-pod' },
      spec: {
        priorityClassName: 'system-node-critical',
        tolerations,
        containers: [{ name: 'helper-pod', image: props.helperImage, imagePullPolicy: 'IfNotPresent' }],
      },
    });

    new k8s.KubeConfigMap(this, 'Resource', {
      metadata: { name: this.name, namespace: props.namespace },
      data: {
        'config.json': `${JSON.stringify(config, undefined, 2)}\n`,
        'setup': '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
        'teardown': '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
        'helperPod.yaml': helperPod,
      },
    });
  }
}
