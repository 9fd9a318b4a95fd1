import { describe, expect, it } from '@jest/globals';
import { InvalidArgument, InvalidFlow } from '../../lib/contract/errors.js';
import { planFlow, type ChildPolicy, type FlowJob } from '../../lib/contract/flows.js';
import { DEFAULT_QUEUE_OPTS } from '../../lib/contract/options.js';
import { childResults, edgeOutcome } from '../../lib/engines/shared/flows.js';
import { loadVectors } from './vectors.js';

interface FlowVectors {
  refusals: { flow: FlowJob; target: string; says: string }[];
  order: { flow: FlowJob; insert: string[] }[];
  edgeOutcome: { jstate: string | null; ostate: string | null; outcome: string }[];
  childResults: {
    policy: ChildPolicy;
    deps: { id: number; outcome: string; result?: string | null; error?: string }[];
    expect: unknown[];
  }[];
}

const vectors = loadVectors<FlowVectors>('flows.json');
const env = { queueOpts: () => ({ ...DEFAULT_QUEUE_OPTS }), enqueueHeaders: null, maxPayloadBytes: 1 << 20 };

describe('flow rules (conformance/contract/flows.json)', () => {
  it('refuses each bad flow before any I/O, naming the job', () => {
    for (const v of vectors.refusals) {
      let err: unknown;
      try {
        planFlow(v.flow, 'q', env);
      } catch (e) {
        err = e;
      }
      if (err instanceof InvalidArgument) {
        expect([v.target, err.argument]).toEqual([v.target, v.target]);
        continue;
      }
      expect([v.target, err instanceof InvalidFlow]).toEqual([v.target, true]);
      expect([v.target, (err as InvalidFlow).target, (err as InvalidFlow).message.includes(v.says)]).toEqual([
        v.target,
        v.target,
        true,
      ]);
    }
  });

  it('inserts every job after the jobs of the flow it depends on', () => {
    for (const v of vectors.order) {
      const plan = planFlow(v.flow, 'q', env);
      expect(plan.jobs.map((j) => JSON.parse(j.text) as string)).toEqual(v.insert);
      expect(plan.jobs[plan.root]!.text).toBe(JSON.stringify(v.flow.payload));
    }
  });

  it('classifies how a dependency ended', () => {
    for (const v of vectors.edgeOutcome) expect([v, edgeOutcome(v)]).toEqual([v, v.outcome]);
  });

  it("lists a waiting job's dependencies as its policy says", () => {
    for (const v of vectors.childResults) {
      const rows = v.deps.map((d) => ({
        dep_id: d.id,
        dep_queue: 'q',
        outcome: d.outcome,
        ostate: null,
        result: d.result ?? null,
        jstate: null,
        last_error: d.error ?? null,
        policy: v.policy,
      }));
      expect([v.policy, childResults(rows)]).toEqual([v.policy, v.expect]);
    }
  });
});
