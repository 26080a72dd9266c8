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

/**
 * What one worker keeps of the nodes it read or wrote, shared by every session it runs. Bounded
 * by bytes as well as by count: a node holds a step's messages, tool results included, so 20,000
 * nodes of large results would be gigabytes. Past either bound the least recently used node goes;
 * it is read from the result store again if a session needs it.
 */
const TRANSCRIPT_CACHE = { nodes: 20_000, bytes: 64 * 1024 * 1024 };

export class TranscriptStore {
  /** In recency order, oldest first: a hit moves a node to the end. */
  private readonly cache = new Map<string, { node: TranscriptNode; bytes: number }>();
  private cachedBytes = 0;

  constructor(
    private readonly store: ResultStore,
    private readonly limits: { nodes: number; bytes: number } = TRANSCRIPT_CACHE,
  ) {}

  /** Stores the messages after `head` and returns the new head (the same head for no messages). */
  async append(head: string | null, messages: AgentMessage[]): Promise<string | null> {
    if (!messages.length) return head;
    const node: TranscriptNode = { prev: head, messages };
    const text = canonicalJson(node as unknown as Json);
    const hash = createHash('sha256').update(text).digest('hex');
    const ref = await this.store.put(`transcript-${hash}`, node as unknown as Json);
    this.remember(ref, node, text.length);
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
    if (hit) {
      this.cache.delete(ref);
      this.cache.set(ref, hit);
      return hit.node;
    }
    const node = (await this.store.get(ref)) as unknown as TranscriptNode | undefined;
    if (!node || !Array.isArray(node.messages))
      throw new Error(
        `transcript node ${ref} is not in this worker's result store: every worker of a session needs the same store (config.resultStore, or the same state folder)`,
      );
    this.remember(ref, node, JSON.stringify(node).length);
    return node;
  }

  /** `chars`: the node's JSON length; twice that is the estimate of what it holds in memory. */
  private remember(ref: string, node: TranscriptNode, chars: number): void {
    const bytes = chars * 2;
    if (bytes > this.limits.bytes) return; // bigger than the whole cache: read it from the store each time
    const old = this.cache.get(ref);
    if (old) {
      this.cache.delete(ref);
      this.cachedBytes -= old.bytes;
    }
    while (this.cache.size && (this.cache.size >= this.limits.nodes || this.cachedBytes + bytes > this.limits.bytes)) {
      const [oldest, entry] = this.cache.entries().next().value as [string, { bytes: number }];
      this.cache.delete(oldest);
      this.cachedBytes -= entry.bytes;
    }
    this.cache.set(ref, { node, bytes });
    this.cachedBytes += bytes;
  }

  /** How many nodes, and the estimate of bytes, the cache holds now. */
  get cached(): { nodes: number; bytes: number } {
    return { nodes: this.cache.size, bytes: this.cachedBytes };
  }
}
