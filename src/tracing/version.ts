/**
 * The version tracing reports as its instrumentation scope.
 * @module
 */

/** cubepi's version (package.json's; a test keeps them equal), the version of the `cubepi` tracer and meter. */
export const CUBEPI_VERSION = '0.2.0';
