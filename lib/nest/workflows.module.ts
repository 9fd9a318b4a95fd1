import {
  Inject,
  Injectable,
  Module,
  type BeforeApplicationShutdown,
  type DynamicModule,
  type OnApplicationBootstrap,
  type Provider,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { InvalidOption } from '../contract/errors.js';
import { defineWorkflow, type WorkflowSpec } from '../workflows/define.js';
import { InvalidHandler } from './errors/invalid-handler.error.js';
import { checkHandlerOptions, type HandlerOptionsShape } from './utils/handler-options.js';
import type { WorkflowContext, WorkflowDefinition, WorkflowsOptions } from '../workflows/types.js';
import { createWorkflows, Workflows } from '../workflows/workflows.js';
import { ALKSTORE_MODULE_OPTIONS } from './alkstore.constants.js';
import type { AlkstoreModuleOptions } from './interfaces/alkstore-options.interface.js';
import { Store } from './store.token.js';
import { ModuleOrm } from './orm/module-orm.js';
import { nestStoreLogger } from './utils/nest-logger.js';
import { workersMode } from './utils/validate-module-options.js';
import { WORKFLOW_METADATA, type WorkflowClass, type WorkflowMetadata } from './workflows.decorator.js';

/** Options of `AlkstoreWorkflowsModule.forRoot`: those of `createWorkflows` but the definitions (found from `@Workflow`). */
export interface AlkstoreWorkflowsOptions extends Omit<
  WorkflowsOptions<unknown>,
  'workflows' | 'transaction' | 'worker'
> {
  /**
   * What a transactional step's transaction is: `'store'` (default: `store.withTx`, `external` is its
   * `tx`) or `'orm'` (`store.joinTransaction` with `AlkstoreModule`'s `orm` option, TypeORM's
   * DataSource by default: `external` is the ORM's handle, e.g. the `EntityManager`).
   */
  readonly transaction?: 'store' | 'orm';
}

const WORKFLOWS_OPTIONS = 'alkstore:workflows-options';

type Definitions = WorkflowDefinition<never, unknown, unknown>[];

/** Finds the `@Workflow` providers; each definition calls its provider's `run` (resolved when it runs). */
function discover(discovery: DiscoveryService): Definitions {
  return discovery.getProviders().flatMap((wrapper) => {
    const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | null | undefined;
    const meta =
      typeof type === 'function'
        ? (Reflect.getMetadata(WORKFLOW_METADATA, type) as WorkflowMetadata | undefined)
        : undefined;
    if (!meta) return [];
    const label = `@Workflow(${JSON.stringify(meta.name)}) ${type!.name}`;
    if (typeof (type!.prototype as Partial<WorkflowClass>).run !== 'function')
      throw new InvalidOption(label, 'needs a method run(input, ctx)');
    const options = meta.options;
    let spec: WorkflowSpec<unknown, unknown, unknown>;
    try {
      checkHandlerOptions('@Workflow', options, WORKFLOW_SHAPE);
      spec = {
        ...options,
        run: (input: unknown, ctx: WorkflowContext<unknown>) => {
          const instance = wrapper.instance as WorkflowClass | undefined;
          if (!instance)
            throw new InvalidOption(
              label,
              'has no instance (a request-scoped or transient provider cannot be a workflow)',
            );
          return instance.run(input, ctx);
        },
      };
      return [defineWorkflow(meta.name, spec) as WorkflowDefinition<never, unknown, unknown>];
    } catch (err) {
      throw new InvalidHandler(`${label}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  });
}

/** What `@Workflow` takes: of the shared handler options, its steps' retries. */
const WORKFLOW_SHAPE: HandlerOptionsShape = {
  shared: ['maxAttempts', 'backoffBaseMs'],
  own: ['version', 'schedule', 'limitKeys'],
  renamed: { limits: 'limitKeys' },
  elsewhere: Object.fromEntries(
    (['concurrency', 'leaseMs', 'idlePollIntervalMs', 'metrics'] as const).map((o) => [
      o,
      `one queue carries every run, so ${o} is set for all workflows on AlkstoreWorkflowsModule.forRoot`,
    ]),
  ),
};

function workflowsOptions(
  options: AlkstoreWorkflowsOptions,
  module: AlkstoreModuleOptions,
  orm: ModuleOrm,
  workflows: Definitions,
): WorkflowsOptions<unknown> {
  const { transaction, ...rest } = options;
  if (transaction !== undefined && transaction !== 'store' && transaction !== 'orm')
    throw new InvalidOption('transaction', "must be 'store' or 'orm' (the module's orm option, TypeORM by default)");
  return {
    logger: module?.logger ?? nestStoreLogger(),
    ...rest,
    workflows,
    ...(transaction === 'orm' ? { transaction: orm.open } : {}),
  };
}

/** Runs the workflows' worker from bootstrap to shutdown (not with `AlkstoreModule`'s `workers: 'off'`). */
@Injectable()
export class AlkstoreWorkflowsHost implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private worker: Workflows<unknown> | null = null;
  private definitions: Definitions = [];
  private readonly scheduler = new AbortController();
  private schedules: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly discovery: DiscoveryService,
    private readonly orm: ModuleOrm,
    @Inject(WORKFLOWS_OPTIONS) private readonly options: AlkstoreWorkflowsOptions,
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly module: AlkstoreModuleOptions,
  ) {}

  /** The definitions found (the `Workflows` provider reads them). */
  found(): Definitions {
    if (this.definitions.length === 0) this.definitions = discover(this.discovery);
    return this.definitions;
  }

  onApplicationBootstrap(): void {
    // 'off' (or the deprecated false): no worker here; 'manual' (the testing kit) still advances runs.
    if (workersMode(this.module?.workers) === 'off' || this.worker) return;
    this.worker = createWorkflows(this.store, {
      ...workflowsOptions(this.options, this.module, this.orm, this.found()),
      worker: true,
    });
    // A scheduled @Workflow needs a scheduler runner even where no @Scheduled handler started one
    // (the runner is leader-elected: a second one in this process only waits for the lock).
    if (this.module?.scheduler !== false && this.found().some((d) => d.schedule !== undefined)) {
      const logger = this.module?.logger ?? nestStoreLogger();
      this.schedules = this.store
        .runSchedules(this.scheduler.signal)
        .catch((err: unknown) => logger.error('the workflows scheduler runner stopped', err));
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.scheduler.abort();
    await this.schedules;
    await w?.close();
  }
}

/**
 * Durable workflows in Nest: finds the `@Workflow` providers, provides `Workflows` (start, signal,
 * cancel, getStatus, waitForResult, list) and runs their worker from bootstrap until shutdown. Import it
 * next to `AlkstoreModule.forRoot(…)`, whose store it uses.
 */
@Module({})
export class AlkstoreWorkflowsModule {
  static forRoot(options: AlkstoreWorkflowsOptions = {}): DynamicModule {
    const providers: Provider[] = [
      { provide: WORKFLOWS_OPTIONS, useValue: options },
      AlkstoreWorkflowsHost,
      {
        provide: Workflows,
        useFactory: (store: Store, host: AlkstoreWorkflowsHost, orm: ModuleOrm, module: AlkstoreModuleOptions) =>
          createWorkflows(store, { ...workflowsOptions(options, module, orm, host.found()), worker: false }),
        inject: [Store, AlkstoreWorkflowsHost, ModuleOrm, ALKSTORE_MODULE_OPTIONS],
      },
    ];
    return {
      module: AlkstoreWorkflowsModule,
      global: true,
      imports: [DiscoveryModule],
      providers,
      exports: [Workflows],
    };
  }
}
