import type { connectNodeAdapter } from "@connectrpc/connect-node";

type NodeHandler = ReturnType<typeof connectNodeAdapter>;
/** The request and response a service's Node server hands to the Connect adapter (HTTP/1.1 or HTTP/2). */
export type NodeServerRequest = Parameters<NodeHandler>[0];
export type NodeServerResponse = Parameters<NodeHandler>[1];
