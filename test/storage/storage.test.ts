import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { findObject, folderObjects, HAS_SCHEMAS, renderOf, schemaErrors } from '../helpers';

const storageOf = (edit?: Parameters<typeof renderOf>[0]) => folderObjects(renderOf(edit), 'storage');

describe('storage', () => {
  it('renders the reference cluster\'s storage objects', () => {
    expect(storageOf()).toMatchSnapshot();
  });

  it('marks exactly one default StorageClass: local-path', () => {
    const classes = storageOf().filter((o) => o.kind === 'StorageClass');
    expect(classes.map((c) => c.metadata.name).sort()).toEqual(['local-disk', 'local-path', 'shared-path']);
    const defaults = classes.filter((c) => c.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true');
    expect(defaults.map((c) => c.metadata.name)).toEqual(['local-path']);
  });

  it('binds local classes on first consumer and the shared class immediately', () => {
    const objects = storageOf();
    expect(findObject(objects, 'StorageClass', 'local-path').volumeBindingMode).toBe('WaitForFirstConsumer');
    expect(findObject(objects, 'StorageClass', 'local-disk').volumeBindingMode).toBe('WaitForFirstConsumer');
    expect(findObject(objects, 'StorageClass', 'shared-path').volumeBindingMode).toBe('Immediate');
  });

  it('maps each class to its path in config.json', () => {
    const cm = findObject(storageOf((d) => {
      d.storage.sharedFilesystem.path = '/home/vols';
      d.nodes.gpuWorkers.localDisk.path = '/mnt/local-nvme';
      d.storage.localPath = { path: '/var/lib/lp' };
    }), 'ConfigMap', 'local-path-config', 'local-path-storage');
    const config = JSON.parse((cm.data as Record<string, string>)['config.json']);
    expect(config.nodePathMap).toEqual([]);
    expect(config.storageClassConfigs['shared-path']).toEqual({ sharedFileSystemPath: '/home/vols', nodePathMap: [] });
    expect(config.storageClassConfigs['local-disk'].nodePathMap).toEqual([{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: ['/mnt/local-nvme'] }]);
    expect(config.storageClassConfigs['local-path'].nodePathMap[0].paths).toEqual(['/var/lib/lp']);
    expect(Object.keys(cm.data as object).sort()).toEqual(['config.json', 'helperPod.yaml', 'setup', 'teardown']);
  });

  it('lets the helper pod onto every described node: a shared-path helper is scheduled, not pinned', () => {
    const helperOf = (edit?: Parameters<typeof storageOf>[0]) => {
      const cm = findObject(storageOf(edit), 'ConfigMap', 'local-path-config', 'local-path-storage');
      return parse((cm.data as Record<string, string>)['helperPod.yaml']);
    };
    const tainted = helperOf((d) => {
      d.nodes.gpuWorkers.taints = [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }, { key: 'dedicated', value: 'gpu', effect: 'NoExecute' }];
      d.nodes.cpuWorkers = { count: 1, cpu: '8', memory: '32Gi', taints: [{ key: 'dedicated', value: 'cpu', effect: 'NoSchedule' }] };
    });
    expect(tainted.spec.tolerations).toEqual([
      { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoExecute' },
      { key: 'dedicated', operator: 'Equal', value: 'cpu', effect: 'NoSchedule' },
    ]);
    expect(tainted.spec.nodeSelector).toBeUndefined();
    expect(tainted.spec.containers).toEqual([{ name: 'helper-pod', image: 'busybox:1.37.0', imagePullPolicy: 'IfNotPresent' }]);
  });

  it('moves the default when the description says so', () => {
    const classes = storageOf((d) => { d.storage.defaultClass = 'shared-path'; }).filter((o) => o.kind === 'StorageClass');
    expect(classes.filter((c) => c.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true').map((c) => c.metadata.name)).toEqual(['shared-path']);
  });

  it('renders the provisioner only when it is managed, on the service node', () => {
    expect(storageOf().map((o) => o.kind)).not.toContain('Deployment');
    const managed = storageOf((d) => { d.installs = { localPathProvisioner: 'managed' }; });
    const dep = findObject(managed, 'Deployment', 'local-path-provisioner', 'local-path-storage') as any;
    const pod = dep.spec.template.spec;
    expect(pod.nodeSelector).toEqual({ 'node-role.kubernetes.io/control-plane': '' });
    expect(pod.tolerations).toEqual([{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.containers[0].image).toMatch(/:v0\.0\.37$/);
    expect(pod.containers[0].securityContext.privileged).toBeUndefined();
    expect(managed.map((o) => o.kind)).toEqual(expect.arrayContaining(['Namespace', 'ServiceAccount', 'ClusterRole', 'Role', 'RoleBinding', 'ClusterRoleBinding']));
  });

  it.skipIf(!HAS_SCHEMAS)('passes strict validation, managed or not', () => {
    expect(schemaErrors(renderOf())).toEqual([]);
    expect(schemaErrors(renderOf((d) => { d.installs = { localPathProvisioner: 'managed' }; }))).toEqual([]);
  });
});
