/* A count worded as English counts it, "1 search", "2 searches": the pages' one helper for every
   message that counts (the Python side's is harness/core/wording.py), put before each page's
   script. */
function counted(n, one, many) {
  return n.toLocaleString("en") + " " + (n === 1 ? one : many || one + "s");
}
