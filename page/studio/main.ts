/**
 * The studio page. (Skeleton: the studio helper fills this in.)
 * @module
 */
document.body.textContent = 'cubepi studio';
