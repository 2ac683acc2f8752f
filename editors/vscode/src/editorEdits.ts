/**
 * How the server's edits land in VS Code. The server applies and rolls back a plan with
 * `workspace/applyEdit`, each file's whole text. An approved plan belongs on disk: the
 * terminal, git, the build and the next plan all read the disk. So the edit goes into the
 * documents (open editors follow, and it is one step of each document's undo stack) and
 * the documents are saved at once. Left to VS Code, the same edit stays unsaved on the
 * desktop and is saved a second later on the web (`files.autoSave`'s default differs).
 *
 * The whole-text edit would replace a document's unsaved changes, so an edit that touches
 * a document the user has not saved is refused with a reason: the server then leaves the
 * plan where it was, and the apply (or rollback) can be run again after a save or revert.
 */
import * as vscode from 'vscode';
import {
  ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, CancellationToken, Middleware,
} from 'vscode-languageclient/node';

type Edit = ApplyWorkspaceEditParams['edit'];

/** The same URI in VS Code's spelling, whatever the server's percent-encoding. */
const key = (uri: string): string => vscode.Uri.parse(uri).toString();

/** The files an edit writes text into, and every file it touches (deletes and renames too). */
function editedFiles(edit: Edit): { written: string[]; touched: string[] } {
  const written = new Set<string>();
  const touched = new Set<string>();
  for (const uri of Object.keys(edit.changes ?? {})) {
    written.add(key(uri));
  }
  for (const change of edit.documentChanges ?? []) {
    if ('textDocument' in change) {
      written.add(key(change.textDocument.uri));
    } else if (change.kind === 'rename') {
      touched.add(key(change.oldUri)).add(key(change.newUri));
      written.delete(key(change.oldUri));
    } else if (change.kind === 'delete') {
      touched.add(key(change.uri));
      written.delete(key(change.uri));
    }
  }
  written.forEach((uri) => touched.add(uri));
  return { written: [...written], touched: [...touched] };
}

function unsavedAmong(uris: string[]): vscode.TextDocument[] {
  const wanted = new Set(uris);
  return vscode.workspace.textDocuments.filter((document) => document.isDirty && wanted.has(document.uri.toString()));
}

const named = (documents: vscode.TextDocument[]): string =>
  documents.map((document) => vscode.workspace.asRelativePath(document.uri)).join(', ');

export const applyEditMiddleware: Middleware['workspace'] = {
  async handleApplyEdit(params, next): Promise<ApplyWorkspaceEditResult> {
    const files = editedFiles(params.edit);
    const unsaved = unsavedAmong(files.touched);
    if (unsaved.length) {
      return { applied: false, failureReason: `unsaved changes in ${named(unsaved)}: save or revert them, then try again` };
    }
    const result = await next(params, CancellationToken.None); // the client itself passes no token
    if (result instanceof Error) {
      return { applied: false, failureReason: result.message };
    }
    if (!result?.applied) {
      return result ?? { applied: false };
    }
    const failed: vscode.TextDocument[] = [];
    for (const document of unsavedAmong(files.written)) {
      if (!(await document.save()) && document.isDirty) {
        failed.push(document);
      }
    }
    if (failed.length) { // the edit is in the editor: say so, and let the user save it
      void vscode.window.showWarningMessage(`CleverAgents: ${params.label ?? 'the edit'} is in the editor but `
        + `could not be saved: ${named(failed)}`);
    }
    return result;
  },
};
