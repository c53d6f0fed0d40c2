import { describe, expect, it } from 'vitest';
import { mirroredRegistry, mirroredValueOverrides, mirrorImage, mirrorImagesIn, mirrorRegistry, mirrorValueImages, unmirrorImage } from '../../src/model/mirrors';
import { imageRefsOf } from '../../src/upstream/images';

const MAP = { 'nvcr.io': 'harbor.lab/nvcr', 'quay.io': 'harbor.lab/quay', 'docker.io': 'harbor.lab/dockerhub', 'ghcr.io/mellanox': 'harbor.lab/mellanox' };

/** The shapes charts name their images in (made up, not any chart's values). */
const VALUES = {
  // GPU Operator: repository and image name apart, the tag in version
  driver: { enabled: false, repository: 'nvcr.io/nvidia', image: 'driver', version: '1.0', manager: { repository: 'nvcr.io/nvidia/cloud-native', image: 'manager', version: 'v1' } },
  // an empty repository: no reference, its image name is no Docker Hub image
  vgpuManager: { repository: '', image: 'vgpu-manager', version: '' },
  // the whole reference in repository (Cilium, Node Feature Discovery)
  agent: { image: { repository: 'quay.io/cilium/cilium', tag: 'v1.0', pullPolicy: 'IfNotPresent' } },
  // registry and repository apart (Grafana), Docker Hub without a registry, an empty registry
  grafana: { image: { registry: 'docker.io', repository: 'grafana/grafana', tag: '12.0' }, sidecar: { image: { registry: 'quay.io', repository: 'kiwigrid/k8s-sidecar' } } },
  operator: { image: { registry: '', repository: 'victoriametrics/operator', tag: '' }, cleanup: { image: { repository: 'bitnami/kubectl' } } },
  // repository and name (a mirrored prefix that is the whole repository)
  maintenance: { image: { repository: 'ghcr.io/mellanox', name: 'maintenance-operator', tag: 'v1' } },
  // whole references in strings: a key ending in image, a mapping named images
  checkpoint: { cleanupImage: 'busybox:1.36', imagePullPolicy: 'Always' },
  images: { operator: 'ghcr.io/k8snetworkplumbingwg/sriov-network-operator', proxy: 'quay.io/brancz/kube-rbac-proxy:v0.21.2', pullPolicy: 'always' },
  // registries alone; a name under a registry given elsewhere (ingress-nginx) is no Docker Hub image, a whole reference beside its tag is one
  global: { imageRegistry: 'docker.io', image: { registry: '' } },
  nginx: { global: { image: { registry: 'quay.io' } }, controller: { image: { image: 'ingress-nginx/controller', tag: 'v1' } }, webhook: { image: 'quay.io/a/webhook', tag: 'v1' } },
  // not images: a template, a list of containers set whole
  templated: { image: '{{ .Values.registry }}/x:1' },
  extraContainers: [{ name: 'a', image: 'quay.io/a/b:1' }, { name: 'c', image: 'registry.k8s.io/c:1' }],
};

describe('the images of a chart\'s values, from the mirrors', () => {
  it('each shape takes its mirror in the fields it already has, changing as few as it can', () => {
    expect(mirroredValueOverrides(VALUES, MAP)).toEqual({
      driver: { repository: 'harbor.lab/nvcr/nvidia', manager: { repository: 'harbor.lab/nvcr/nvidia/cloud-native' } },
      agent: { image: { repository: 'harbor.lab/quay/cilium/cilium' } },
      grafana: { image: { registry: 'harbor.lab/dockerhub' }, sidecar: { image: { registry: 'harbor.lab/quay' } } },
      operator: { image: { repository: 'harbor.lab/dockerhub/victoriametrics/operator' }, cleanup: { image: { repository: 'harbor.lab/dockerhub/bitnami/kubectl' } } },
      maintenance: { image: { repository: 'harbor.lab/mellanox' } },
      checkpoint: { cleanupImage: 'harbor.lab/dockerhub/library/busybox:1.36' },
      images: { proxy: 'harbor.lab/quay/brancz/kube-rbac-proxy:v0.21.2' },
      global: { imageRegistry: 'harbor.lab/dockerhub' },
      nginx: { global: { image: { registry: 'harbor.lab/quay' } }, webhook: { image: 'harbor.lab/quay/a/webhook' } },
      extraContainers: [{ name: 'a', image: 'harbor.lab/quay/a/b:1' }, { name: 'c', image: 'registry.k8s.io/c:1' }],
    });
  });

  it('a registry the map does not name is left alone, and so is every field that names no image', () => {
    const mirrored = mirrorValueImages(VALUES, MAP);
    expect(mirrored.images.operator).toBe(VALUES.images.operator);
    expect(mirrored.extraContainers[1]).toEqual(VALUES.extraContainers[1]);
    expect([mirrored.vgpuManager, mirrored.templated, mirrored.checkpoint.imagePullPolicy, mirrored.images.pullPolicy, mirrored.global.image])
      .toEqual([VALUES.vgpuManager, VALUES.templated, 'Always', 'always', { registry: '' }]);
    expect(mirrored.driver).toMatchObject({ enabled: false, image: 'driver', version: '1.0' });
    expect(mirroredValueOverrides(VALUES, { 'registry.example': 'harbor.lab/example' })).toEqual({});
    expect(mirrorValueImages(VALUES, {})).toBe(VALUES);
    expect(mirrorRegistry('quay.io', MAP)).toBe('harbor.lab/quay');
    expect(mirrorRegistry('quay.io.example', MAP)).toBe('quay.io.example');
  });

  it('the same values give the same overrides, in the values\' order, and the input is not changed', () => {
    const before = JSON.stringify(VALUES);
    const once = JSON.stringify(mirroredValueOverrides(VALUES, MAP));
    expect(JSON.stringify(mirroredValueOverrides(structuredClone(VALUES), { ...MAP }))).toBe(once);
    expect(JSON.stringify(VALUES)).toBe(before);
  });
});

describe('rendered objects: what mirrorImagesIn rewrites is what the image rules read (isImageCoordinates)', () => {
  // operator coordinates with and without a version, a whole reference, an operand image in an environment variable
  const policy = {
    spec: {
      driver: { repository: 'nvcr.io/nvidia', image: 'driver', version: '1.0' },
      toolkit: { repository: 'nvcr.io/nvidia/k8s', image: 'container-toolkit' },
      containers: [{ image: 'quay.io/org/agent:v1', env: [{ name: 'VALIDATOR_IMAGE', value: 'nvcr.io/nvidia/validator:v2' }] }],
    },
  };
  const refs = (o: object) => imageRefsOf(o).map((r) => `${r.repository}${r.tag ? `:${r.tag}` : ''}`);

  it('reads coordinates without a version as repository/image, not as an image of its own name', () => {
    expect(refs(policy).sort()).toEqual(['nvcr.io/nvidia/driver:1.0', 'nvcr.io/nvidia/k8s/container-toolkit', 'nvcr.io/nvidia/validator:v2', 'quay.io/org/agent:v1']);
  });

  it('every reference the rules read is from a mirror once mirrored, and nothing else changes', () => {
    const mirrored = mirrorImagesIn(policy, MAP);
    expect(refs(mirrored).filter((r) => mirroredRegistry(r, MAP) !== undefined)).toEqual([]);
    expect(refs(mirrored).sort()).toEqual(refs(policy).map((r) => mirrorImage(r, MAP)).sort());
    expect(mirrored.spec.toolkit.image).toBe('container-toolkit');
  });
});

describe('what a prefix of mirrors.images matches', () => {
  const map = { 'nvcr.io/nvidia/gpu-operator': 'harbor.lab/gpu-operator', 'harbor.lab': 'mirror.lab/harbor', 'nvcr.io': 'harbor.lab/nvcr' };

  it('a whole repository: its tags and digests, before the registry it is in (the longest wins), both ways', () => {
    expect(mirrorImage('nvcr.io/nvidia/gpu-operator:v26.7.0', map)).toBe('harbor.lab/gpu-operator:v26.7.0');
    expect(mirrorImage('nvcr.io/nvidia/gpu-operator@sha256:0123', map)).toBe('harbor.lab/gpu-operator@sha256:0123');
    expect(mirrorImage('nvcr.io/nvidia/gpu-operator', map)).toBe('harbor.lab/gpu-operator');
    expect(mirroredRegistry('nvcr.io/nvidia/gpu-operator:v26.7.0', map)).toBe('nvcr.io/nvidia/gpu-operator');
    expect(unmirrorImage('harbor.lab/gpu-operator:v26.7.0', map)).toBe('nvcr.io/nvidia/gpu-operator:v26.7.0');
  });

  it('a repository is no prefix of a longer name, and after a bare registry a colon is its port', () => {
    expect(mirrorImage('nvcr.io/nvidia/gpu-operator-validator:v1', map)).toBe('harbor.lab/nvcr/nvidia/gpu-operator-validator:v1');
    expect(mirrorImage('harbor.lab:5000/team/app:v1', map)).toBe('harbor.lab:5000/team/app:v1');
    expect(mirrorImage('harbor.lab/team/app:v1', map)).toBe('mirror.lab/harbor/team/app:v1');
  });
});
