import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';

/** One method of a provider or controller instance, as a decorator explorer walks them. */
export interface DiscoveredInstanceMethod {
  readonly wrapper: InstanceWrapper;
  readonly instance: object;
  /** `ClassName.methodName`, used in every log line and error about it. */
  readonly label: string;
  readonly method: unknown;
}

/** Every method of every provider and controller instance of the application. */
export function* instanceMethods(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
): Generator<DiscoveredInstanceMethod> {
  for (const wrapper of [...discovery.getProviders(), ...discovery.getControllers()]) {
    const instance: unknown = wrapper.instance;
    if (!instance || typeof instance !== 'object') continue;
    const proto: unknown = Object.getPrototypeOf(instance);
    if (!proto) continue;
    const className = (instance.constructor as { name?: string } | undefined)?.name ?? String(wrapper.name);
    for (const methodName of scanner.getAllMethodNames(proto)) {
      yield {
        wrapper,
        instance,
        label: `${className}.${methodName}`,
        method: (instance as Record<string, unknown>)[methodName],
      };
    }
  }
}
