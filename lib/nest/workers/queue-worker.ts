// Deprecated path, kept for one minor version (0.3): QueueWorker moved to lib/worker (`alkstore/worker`).
/** @deprecated Import `QueueWorker` from `alkstore/worker` (or `alkstore/nest`); this path goes in 0.4. */
export { QueueWorker, AUTO_PREFETCH_MAX, type QueueWorkerOptions } from '../../worker/queue-worker.js';
