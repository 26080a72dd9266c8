// A session's transcript, stored content-addressed in the result store: a chain of nodes, each
// holding the messages one model step added and the reference of the node before it. The
// workflow carries only the head's reference, so a step's history grows with its new messages,
// never with the whole transcript. Nodes never change, so a worker may cache them freely.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../pipeline/json';
import type { AgentMessage } from '../pipeline/session';
import type { Json } from '../pipeline/types';
import type { ResultStore } from '../stores/claim-check';

interface TranscriptNode {
  prev: string | null;
  messages: AgentMessage[];
}

const CACHE_NODES = 20_000;

export class TranscriptStore {
  private readonly cache = new Map<string, TranscriptNode>();

  constructor(private readonly store: ResultStore) {}

  /** Stores the messages after `head` and returns the new head (the same head for no messages). */
  async append(head: string | null, messages: AgentMessage[]): Promise<string | null> {
    if (!messages.length) return head;
    const node: TranscriptNode = { prev: head, messages };
    const hash = createHash('sha256')
      .update(canonicalJson(node as unknown as Json))
      .digest('hex');
    const ref = await this.store.put(`transcript-${hash}`, node as unknown as Json);
    this.remember(ref, node);
    return ref;
  }

  /** The whole transcript up to `head`, oldest first. */
  async load(head: string | null): Promise<AgentMessage[]> {
    const chunks: AgentMessage[][] = [];
    for (let ref = head; ref; ) {
      const node = await this.node(ref);
      chunks.push(node.messages);
      ref = node.prev;
    }
    return chunks.reverse().flat();
  }

  private async node(ref: string): Promise<TranscriptNode> {
    const hit = this.cache.get(ref);
    if (hit) return hit;
    const node = (await this.store.get(ref)) as unknown as TranscriptNode | undefined;
    if (!node || !Array.isArray(node.messages))
      throw new Error(
        `transcript node ${ref} is not in this worker's result store: every worker of a session needs the same store (config.resultStore, or the same state folder)`,
      );
    this.remember(ref, node);
    return node;
  }

  private remember(ref: string, node: TranscriptNode): void {
    if (this.cache.size >= CACHE_NODES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(ref, node);
  }
}
