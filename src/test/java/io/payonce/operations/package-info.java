/**
 * The operations endpoints as an operator reads them: health, metrics and the API document.
 */
package io.payonce.operations;
