/** A plan's diff as whole files: each file's before and after text, ready for a diff view. */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';

import { AgentsClient, PlanStatus } from './agentsClient';
import { FileSides, fileSides } from './planDiff';

export interface PlanReview {
  plan: PlanStatus;
  /** The unified diff, as the server wrote it. */
  diff: string;
  files: FileSides[];
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error: any) {
    if (error?.code === 'ENOENT' || error?.code === 'ENOTDIR' || error?.code === 'EISDIR') {
      return undefined;
    }
    throw error;
  }
}

/** The plan's files read against the workspace at `root` (where the server's workspace is). */
export async function reviewPlan(agents: AgentsClient, planId: string, root: string): Promise<PlanReview> {
  const result = await agents.planDiff(planId);
  const diskIsNew = result.phase === 'apply' && result.state === 'completed';
  const files = await Promise.all(result.files.map(async (file) =>
    fileSides(file, await readText(path.join(root, file.path)), diskIsNew)));
  const { diff, files: _files, stats: _stats, ...plan } = result;
  return { plan, diff, files };
}
