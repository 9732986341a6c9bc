import type { Client } from "@connectrpc/connect";
import type { SigningService } from "@svc/proto/signing/v1/signing_pb.js";
import type { KeySetCache } from "./operations/jwks.ts";

/** What operation handlers reach beyond the request: the business services' clients and shared caches. */
export interface GatewayServices {
  signing: Client<typeof SigningService>;
  keySet: KeySetCache;
}
