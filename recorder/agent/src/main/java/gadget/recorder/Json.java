package gadget.recorder;

/** The little JSON the trace header needs. */
final class Json {
    private Json() {}

    /** {@code v} as a JSON string literal. */
    static String string(String v) {
        StringBuilder s = new StringBuilder(v.length() + 2).append('"');
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            switch (c) {
                case '"':
                    s.append("\\\"");
                    break;
                case '\\':
                    s.append("\\\\");
                    break;
                default:
                    if (c < 0x20) {
                        s.append(String.format("\\u%04x", (int) c));
                    } else {
                        s.append(c);
                    }
            }
        }
        return s.append('"').toString();
    }
}
