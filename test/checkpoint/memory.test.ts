import { describe, it } from 'vitest';
import { MemoryCheckpointer } from 'cubepi';
import { checkpointerConformance } from 'cubepi/testing';

checkpointerConformance(() => new MemoryCheckpointer(), { name: 'MemoryCheckpointer conformance', describe, it });
