/**
 * A bounded look at how deeply server-supplied JSON nests, before anything recursive (`JSON.stringify`, a schema
 * conversion) walks it.
 * @module
 */

/**
 * Whether `value` nests more than `maxDepth` levels of objects and arrays (a bare value is 0 levels, `{}` 1). Walks
 * with a stack of its own, never recursion, and stops at the first path deeper than `maxDepth`: a result nested
 * 100,000 levels costs at most `maxDepth` steps down that path, and cannot overflow the call stack. A cycle counts as
 * too deep.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth + 1 > maxDepth) return true;
    for (const child of Object.values(current)) {
      if (typeof child === 'object' && child !== null) stack.push({ value: child, depth: depth + 1 });
    }
  }
  return false;
}
