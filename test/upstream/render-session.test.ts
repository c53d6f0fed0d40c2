import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/engines';
import { RenderOutput } from '../../src/upstream/render-cache';
import { RenderSession } from '../../src/upstream/render-session';

/*
 * A render a bound stopped (a hang at its timeout, a flood, the memory cap) is never run again in the same
 * command: not when another Application or cluster asks for it, not as the determinism rule's second render.
 * Before, each ask ran the hanging engine to its timeout again (a hanging kustomize: 2 x 120 s).
 */

const EMPTY: RenderOutput = { objects: [], sources: [] } as unknown as RenderOutput;

function counted(fail?: EngineError): { runs: () => number; run: () => Promise<RenderOutput> } {
  let n = 0;
  return { runs: () => n, run: async () => { n += 1; if (fail) throw fail; return EMPTY; } };
}

const settle = (p: Promise<unknown>) => p.then(() => 'ok', (e: Error) => e.message);

describe('a render session', () => {
  it('runs a render a bound stopped once: asked again, and asked afresh, it fails the same way without running', async () => {
    const hang = counted(new EngineError('no answer within 1 s; stopped (GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it)', 'kubectl kustomize', true));
    const session = new RenderSession(undefined);
    const first = await settle(session.render('overlay-1', 'overlay', hang.run, true));
    expect(first).toBe('kubectl kustomize: no answer within 1 s; stopped (GPU_CLUSTER_MANIFESTS_ENGINE_TIMEOUT=<seconds> raises it)');
    expect(await settle(session.render('overlay-1', 'overlay', hang.run, true))).toBe(first);
    expect(await settle(session.rerun('overlay-1', 'overlay', hang.run))).toBe(first);
    expect(hang.runs()).toBe(1);
    expect(session.counts.overlay).toMatchObject({ runs: 1, shared: 2 });
  });

  it('runs a render that failed otherwise (the engine refused it) again when asked again, and a rerun afresh', async () => {
    const refused = counted(new EngineError('exit 1: Error: boom', 'kubectl kustomize'));
    const session = new RenderSession(undefined);
    await settle(session.render('overlay-2', 'overlay', refused.run, true));
    await settle(session.render('overlay-2', 'overlay', refused.run, true));
    expect(refused.runs()).toBe(2);
    const ok = counted();
    await session.render('chart-1', 'chart', ok.run, true);
    await session.rerun('chart-1', 'chart', ok.run);
    expect(ok.runs()).toBe(2);
  });
});
