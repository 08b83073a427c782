/**
 * Files of a drop, folders included: each DataTransfer item's
 * `webkitGetAsEntry()` is walked recursively (directory readers return their
 * entries in batches until an empty one). Items without an entry (a plain
 * file from another page) fall back to `getAsFile()`.
 */
import type { PathedFile } from './run-directory.ts';

function fileOf(entry: FileSystemFileEntry): Promise<File> {
  return new Promise((resolve, reject) => entry.file(resolve, reject));
}

function batchOf(reader: FileSystemDirectoryReader): Promise<FileSystemEntry[]> {
  return new Promise((resolve, reject) => reader.readEntries(resolve, reject));
}

async function walk(entry: FileSystemEntry, out: PathedFile[]): Promise<void> {
  if (entry.isFile) {
    out.push({ path: entry.fullPath.replace(/^\/+/, ''), file: await fileOf(entry as FileSystemFileEntry) });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  for (;;) {
    const batch = await batchOf(reader);
    if (batch.length === 0) break;
    for (const child of batch) await walk(child, out);
  }
}

/**
 * Collects the files of a drop. Must be called during the drop event (the
 * entries are taken synchronously; reading them continues afterwards).
 *
 * @param transfer - the drop's DataTransfer.
 * @returns every file with its path (folder names included).
 */
export function droppedFiles(transfer: DataTransfer | null): Promise<PathedFile[]> {
  if (transfer === null) return Promise.resolve([]);
  const entries: FileSystemEntry[] = [];
  const plain: PathedFile[] = [];
  for (const item of Array.from(transfer.items)) {
    if (item.kind !== 'file') continue;
    const entry = item.webkitGetAsEntry();
    if (entry !== null) entries.push(entry);
    else {
      const file = item.getAsFile();
      if (file !== null) plain.push({ path: file.name, file });
    }
  }
  if (entries.length === 0 && plain.length === 0) return Promise.resolve(Array.from(transfer.files, (file) => ({ path: file.name, file })));
  return (async () => {
    const out: PathedFile[] = [...plain];
    for (const e of entries) await walk(e, out);
    return out;
  })();
}
