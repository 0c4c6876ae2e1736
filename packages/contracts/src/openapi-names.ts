import type { Ref } from './openapi-types.ts';

// How the document names what it points at: a component's $ref, and names made from object types.

export const ref = (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): Ref => ({
  $ref: `#/components/${kind}/${name}`,
});

export const capitalized = (word: string) => word[0]!.toUpperCase() + word.slice(1);
