# Generates the C++ source holding the HTML report's own files (page.html,
# page.css, page.js) as strings. Run at build time by stats/report/CMakeLists.txt:
#   cmake -DDIR=<this folder> -DOUT=<file.cpp> -P embed.cmake
set(out "// Generated from stats/report/html/ by embed.cmake: do not edit.\nnamespace arenastat::html_assets {\n")
foreach(pair "page_html;page.html" "page_css;page.css" "page_js;page.js")
  list(GET pair 0 symbol)
  list(GET pair 1 file)
  file(READ ${DIR}/${file} text)
  string(TOLOWER "${text}" lower)
  # Closing tags would end the element the text is embedded in.
  foreach(bad "</script" "</style" ")arenastat_embed\"")
    string(FIND "${lower}" "${bad}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${DIR}/${file} contains '${bad}', which cannot be embedded")
    endif()
  endforeach()
  string(APPEND out "extern const char ${symbol}[];\nconst char ${symbol}[] = R\"arenastat_embed(${text})arenastat_embed\";\n")
endforeach()
string(APPEND out "}  // namespace arenastat::html_assets\n")
file(WRITE ${OUT}.tmp "${out}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
