package srm.copier;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * The origin rule of loop-free active/active under the identity policy (DESIGN.md, beyond
 * MM2 3): the one implementation of it. Python keeps only the header's name and the shared
 * golden cases ({@code libs/srm_common/tests/golden/origin_rule.json}) that test this class.
 *
 * <ul>
 *   <li>no origin header: the record was produced on the source; the copy gets one naming
 *       the source ({@link Action#STAMP});
 *   <li>the first origin header names the target: the record was produced there, copying
 *       it back would loop ({@link Action#DROP});
 *   <li>it names another cluster: copied as it is ({@link Action#KEEP}; never rewritten on
 *       later hops);
 *   <li>empty, null or not UTF-8: {@link MalformedOriginException}, a poison record.
 * </ul>
 */
public final class OriginRule {
    /** What happens to one record. */
    public enum Action { STAMP, KEEP, DROP }

    /** A record whose origin header cannot name a cluster. */
    public static final class MalformedOriginException extends Exception {
        private static final long serialVersionUID = 1L;

        MalformedOriginException(String message) {
            super(message);
        }
    }

    private OriginRule() {}

    /** The action for a record with {@code headers} copied by a flow into {@code targetAlias}. */
    public static Action decide(Headers headers, String headerName, String targetAlias)
            throws MalformedOriginException {
        for (Header header : headers) {
            if (!header.key().equals(headerName)) {
                continue;
            }
            String origin = decodeAlias(header.value(), headerName);
            return origin.equals(targetAlias) ? Action.DROP : Action.KEEP;
        }
        return Action.STAMP;
    }

    private static String decodeAlias(byte[] value, String headerName) throws MalformedOriginException {
        if (value == null || value.length == 0) {
            throw new MalformedOriginException(
                    "header '" + headerName + "' is empty; it must hold the alias of the cluster"
                            + " the record was produced on");
        }
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(value))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new MalformedOriginException(
                    "header '" + headerName + "' is not UTF-8; it must hold a cluster alias");
        }
    }
}
