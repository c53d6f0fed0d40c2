/**
 * The project file of a clusters repository, as cdk8s has `cdk8s.yaml`: where the descriptions live
 * and where synth renders, both relative to the file. Every command finds it by searching upwards
 * from the working folder, so `npx gpu-cluster-manifests synth` works from any folder of the repo.
 */
export const PROJECT_FILE = 'gpu-cluster-manifests.yaml';

/** The keys of a project file, what each means, and its default. */
export const PROJECT_KEYS = {
  clusters: { default: 'clusters', what: 'the folder of the cluster descriptions' },
  out: { default: 'dist', what: 'the output folder synth renders into (Argo CD syncs it)' },
} as const;
