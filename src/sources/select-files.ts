/**
 * Reads the keys a ConfigMap source selects, as bytes, under the paths they become. Keys the source does
 * not select are never read, so editing them cannot change the snapshot.
 */
import type { ConfigMapObject } from '../api/core.ts';
import type { ConfigMapSource } from '../api/ptah-schema.ts';
import { SOURCE_PATH_PATTERN } from '../api/ptah-schema.ts';
import type { SourceFileBytes } from './snapshot-manifest.ts';

const safePath = new RegExp(SOURCE_PATH_PATTERN);

export class SourceSelectionError extends Error {
  override readonly name = 'SourceSelectionError';
  constructor(
    readonly reason: 'KeyNotFound' | 'UnsafePath' | 'WrongConfigMap',
    message: string,
  ) {
    super(message);
  }
}

export function selectFiles(configMap: ConfigMapObject, source: ConfigMapSource): SourceFileBytes[] {
  if (configMap.metadata.name !== source.name) {
    throw new SourceSelectionError(
      'WrongConfigMap',
      `ConfigMap ${configMap.metadata.name} is not the source ${source.name}`,
    );
  }
  return source.files.map((file) => {
    const path = file.path ?? file.key;
    if (!safePath.test(path)) {
      throw new SourceSelectionError(
        'UnsafePath',
        `the path ${JSON.stringify(path)} for key ${file.key} is not a safe relative path`,
      );
    }
    const text = configMap.data?.[file.key];
    if (text !== undefined) return { path, bytes: Buffer.from(text, 'utf8') };
    const binary = configMap.binaryData?.[file.key];
    if (binary !== undefined) return { path, bytes: Buffer.from(binary, 'base64') };
    throw new SourceSelectionError('KeyNotFound', `ConfigMap ${source.name} has no key ${file.key}`);
  });
}
