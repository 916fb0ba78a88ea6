/**
 * The packaged application killed, stopped, cut off from MySQL or the channel, or run with a skewed
 * clock: nothing acknowledged is lost and every payment ends on the channel's word.
 */
package io.payonce.recovery;
