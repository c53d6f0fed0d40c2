import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ClusterModel, reclaimPolicyOf, TolerationSpec } from '../../model/model';
import { NAMESPACES, STORAGE_CLASSES } from '../../model/names';
import { VERSIONS } from '../../versions';
import { componentChartProps, ComponentChartProps, ComponentDefinition } from '../component';
import { LocalPathConfig } from './local-path-config';
import { LocalPathProvisioner } from './local-path-provisioner';
import { LocalPathStorageClass } from './local-path-storage-class';

/** Tolerations of every described node's taints, each once. */
function everyNodeTolerations(model: ClusterModel): TolerationSpec[] {
  const seen = new Set<string>();
  const out: TolerationSpec[] = [];
  for (const t of [...model.serviceNode.tolerations, ...model.gpuWorkers.tolerations, ...(model.cpuWorkers?.tolerations ?? [])]) {
    const key = JSON.stringify([t.key, t.operator, t.value, t.effect]);
    if (!seen.has(key)) out.push({ ...t });
    seen.add(key);
  }
  return out;
}

/**
 * Storage: the three StorageClasses of an Instant Cluster, all served by local-path-provisioner,
 * and its configuration (plus the provisioner itself when it is managed here).
 */
export class StorageChart extends Chart {
  constructor(scope: Construct, id: string, props: ComponentChartProps) {
    super(scope, id, componentChartProps(props.model, props));
    const d = props.model.description;
    const defaultClass = d.storage.defaultClass;
    const reclaimPolicy = (name: string) => reclaimPolicyOf(d.storage, name);

    const config = new LocalPathConfig(this, 'Config', {
      namespace: NAMESPACES.localPathStorage,
      helperImage: VERSIONS.localPathProvisioner.helperImage,
      // A shared-path helper is scheduled like any pod: let it onto any described node, tainted or not.
      helperTolerations: everyNodeTolerations(props.model),
      storageClasses: {
        [STORAGE_CLASSES.localPath]: { nodePath: d.storage.localPath.path },
        [STORAGE_CLASSES.sharedPath]: { sharedFileSystemPath: d.storage.sharedFilesystem.path },
        [STORAGE_CLASSES.localDisk]: { nodePath: d.nodes.gpuWorkers.localDisk.path },
      },
    });

    new LocalPathStorageClass(this, 'LocalPath', {
      name: STORAGE_CLASSES.localPath, isDefault: defaultClass === STORAGE_CLASSES.localPath, reclaimPolicy: reclaimPolicy(STORAGE_CLASSES.localPath),
    });
    new LocalPathStorageClass(this, 'SharedPath', {
      name: STORAGE_CLASSES.sharedPath,
      isDefault: defaultClass === STORAGE_CLASSES.sharedPath,
      reclaimPolicy: reclaimPolicy(STORAGE_CLASSES.sharedPath),
      volumeBindingMode: 'Immediate',
    });
    new LocalPathStorageClass(this, 'LocalDisk', {
      name: STORAGE_CLASSES.localDisk, isDefault: defaultClass === STORAGE_CLASSES.localDisk, reclaimPolicy: reclaimPolicy(STORAGE_CLASSES.localDisk),
    });

    if (d.installs.localPathProvisioner === 'managed') {
      new LocalPathProvisioner(this, 'Provisioner', {
        namespace: NAMESPACES.localPathStorage,
        image: VERSIONS.localPathProvisioner.image,
        configMapName: config.name,
        placement: props.model.serviceNode,
      });
    }
  }
}

export const storage: ComponentDefinition = {
  folder: 'storage',
  description: 'StorageClasses local-path (default), shared-path (RWX on /home), local-disk (NVMe) and the local-path-provisioner config',
  build: (scope: Construct, model: ClusterModel) => new StorageChart(scope, 'storage', { model }),
};
