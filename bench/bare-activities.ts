// The floor on Temporal: the bench's tool body as a plain activity, nothing around it.
import { echoBody } from './config';

export const bareActivities = {
  async runBody(args: string): Promise<string> {
    return echoBody(JSON.parse(args));
  },
};

export type BareActivities = typeof bareActivities;
