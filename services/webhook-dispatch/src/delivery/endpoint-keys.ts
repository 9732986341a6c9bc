import type { KeyObject } from "node:crypto";
import type { SecretBox } from "../endpoints/endpoint-secret.ts";
import type { ClaimedDelivery } from "./delivery-store.ts";
import { signingKey } from "./signature.ts";

export interface EndpointKeys {
  /** The keys that sign an attempt at `at`: the current secret's, then the previous one's while it lasts. */
  keysFor(delivery: ClaimedDelivery, at: Date): KeyObject[];
}

/**
 * Opens each endpoint's secrets once per secret version instead of once per attempt; a rotation
 * (a new version in the claimed row) replaces the cached keys, in every replica.
 */
export function createEndpointKeys(box: SecretBox): EndpointKeys {
  const cache = new Map<string, { version: number; current: KeyObject; previous: KeyObject | null }>();
  return {
    keysFor(delivery, at) {
      let entry = cache.get(delivery.endpointId);
      if (entry?.version !== delivery.secretVersion) {
        entry = {
          version: delivery.secretVersion,
          current: signingKey(box.open(delivery.secretSealed, delivery.endpointId)),
          previous: delivery.previousSecretSealed
            ? signingKey(box.open(delivery.previousSecretSealed, delivery.endpointId))
            : null,
        };
        cache.set(delivery.endpointId, entry);
      }
      const { current, previous } = entry;
      const previousValid = delivery.previousSecretExpiresAt !== null && at < delivery.previousSecretExpiresAt;
      return previous && previousValid ? [current, previous] : [current];
    },
  };
}
