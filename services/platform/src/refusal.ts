import { type Code, ConnectError } from "@connectrpc/connect";

/**
 * A request a service refuses on purpose, named in the service's own vocabulary (`kind`), so domain
 * code never speaks the wire. Each service names its kinds (a union of strings) and a small typed
 * function that makes them; `refusalTranslator` is how its routes turn them into Connect codes, while
 * anything else passes through as a real failure.
 */
export class DomainRefusal<K extends string> extends Error {
  readonly kind: K;
  constructor(kind: K, message: string) {
    super(message);
    this.name = new.target.name;
    this.kind = kind;
  }
}

export function refusalTranslator<K extends string>(codes: Record<K, Code>) {
  return async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof DomainRefusal && Object.hasOwn(codes, error.kind))
        throw new ConnectError(error.message, codes[error.kind as K]);
      throw error;
    }
  };
}
