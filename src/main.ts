import * as path from 'node:path';
import { main } from './cli';

/**
 * Entry point of `npx cdk8s synth` (cdk8s.yaml: `node projenrc/launch.cjs --cdk8s-app`, which
 * compiles first when the sources changed, so it works on a fresh clone). It runs the same
 * render + validate pipeline as `npm run synth` (the descriptions of the project file found from the
 * working folder, where cdk8s runs its app), into the cdk8s output folder (cdk8s.out/, which the
 * cdk8s CLI empties first), so the cdk8s habit yields the same manifests and never touches dist/.
 */
const outdir = process.env.CDK8S_OUTDIR ?? path.resolve('cdk8s.out');
void Promise.resolve(main(['synth', '--out', outdir, '--quiet'])).then((code) => {
  process.exitCode = code;
});
