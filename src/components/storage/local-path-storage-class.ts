import * as k8s from 'cdk8s-plus-28/lib/imports/k8s';
import { Construct } from 'constructs';
import { LABELS, LOCAL_PATH_PROVISIONER } from '../../model/names';

export interface LocalPathStorageClassProps {
  /** StorageClass name (also its key in the provisioner's config.json). */
  readonly name: string;
  /**
   * Marks the class as the cluster default (`storageclass.kubernetes.io/is-default-class`).
   * @default false
   */
  readonly isDefault?: boolean;
  /**
   * `Immediate` only for shared filesystems (a volume there is reachable from every node).
   * @default "WaitForFirstConsumer"
   */
  readonly volumeBindingMode?: 'WaitForFirstConsumer' | 'Immediate';
  /**
   * @default "Delete"
   */
  readonly reclaimPolicy?: 'Delete' | 'Retain';
}

/** A StorageClass served by rancher/local-path-provisioner. */
export class LocalPathStorageClass extends Construct {
  readonly name: string;

  constructor(scope: Construct, id: string, props: LocalPathStorageClassProps) {
    super(scope, id);
    this.name = props.name;
    const isDefault = props.isDefault ?? false;
    new k8s.KubeStorageClass(this, 'Resource', {
      metadata: {
        name: props.name,
        // Always explicit, so that a class that stops being the default is un-marked on sync.
        annotations: { [LABELS.defaultStorageClass]: isDefault ? 'true' : 'false' },
      },
      provisioner: LOCAL_PATH_PROVISIONER,
      volumeBindingMode: props.volumeBindingMode ?? 'WaitForFirstConsumer',
      reclaimPolicy: props.reclaimPolicy ?? 'Delete',
      allowVolumeExpansion: false,
    });
  }
}
