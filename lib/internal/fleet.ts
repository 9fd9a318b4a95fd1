import {
  NODE_GONE_INTERVALS,
  NODE_HEARTBEAT_MS,
  type NodeHeartbeat,
  type NodeInfo,
  type NodeQueue,
} from '../contract/admin.js';
import { InvalidArgument } from '../contract/errors.js';
import { requireInt, requireNonBlankString } from '../contract/validate.js';

/** Most queues one heartbeat names. */
export const NODE_QUEUES_MAX = 500;

function text(argument: string, v: unknown, max: number): string {
  const s = requireNonBlankString(argument, v);
  if (s.length > max) throw new InvalidArgument(argument, `must be at most ${max} characters, got ${s.length}`);
  return s;
}

/** Checks a heartbeat before any I/O; the node id and the JSON the engines store beside it. */
export function resolveHeartbeat(node: NodeHeartbeat): { nodeId: string; infoText: string } {
  if (typeof node !== 'object' || node === null) throw new InvalidArgument('node', 'must be an object');
  const nodeId = text('node.nodeId', node.nodeId, 200);
  const host = text('node.host', node.host, 200);
  const pid = requireInt('node.pid', node.pid, 0, 2 ** 31);
  const version = text('node.version', node.version, 100);
  const startedAt = requireInt('node.startedAt', node.startedAt, 0, 8.64e15);
  const intervalMs = requireInt('node.intervalMs', node.intervalMs, 100, 600_000);
  if (!Array.isArray(node.queues)) throw new InvalidArgument('node.queues', 'must be an array');
  if (node.queues.length > NODE_QUEUES_MAX)
    throw new InvalidArgument('node.queues', `must name at most ${NODE_QUEUES_MAX} queues, got ${node.queues.length}`);
  const queues: NodeQueue[] = node.queues.map((q: NodeQueue, i: number) => ({
    queue: text(`node.queues[${i}].queue`, q?.queue, 300),
    concurrency: requireInt(`node.queues[${i}].concurrency`, q?.concurrency, 0, 1_000_000),
    running: requireInt(`node.queues[${i}].running`, q?.running, 0, 100_000_000),
  }));
  return { nodeId, infoText: JSON.stringify({ host, pid, version, startedAt, intervalMs, queues }) };
}

/** A stored heartbeat row as the fleet view reads it; `now` is the database clock. */
export function toNode(nodeId: string, infoText: string, heartbeatAt: number, now: number): NodeInfo {
  let info: Partial<Omit<NodeHeartbeat, 'nodeId'>> = {};
  try {
    info = JSON.parse(infoText) as typeof info;
  } catch {
    // A row written by something else: shown with what it has.
  }
  const intervalMs = typeof info.intervalMs === 'number' ? info.intervalMs : NODE_HEARTBEAT_MS;
  return {
    nodeId,
    host: typeof info.host === 'string' ? info.host : '',
    pid: typeof info.pid === 'number' ? info.pid : 0,
    version: typeof info.version === 'string' ? info.version : 'unknown',
    startedAt: typeof info.startedAt === 'number' ? info.startedAt : heartbeatAt,
    intervalMs,
    queues: Array.isArray(info.queues) ? info.queues : [],
    heartbeatAt,
    gone: now - heartbeatAt > NODE_GONE_INTERVALS * intervalMs,
  };
}
