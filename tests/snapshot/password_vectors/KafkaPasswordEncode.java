// Encodes a password as Kafka's EncryptingPasswordEncoder.encode does (core/src/main/scala/kafka/utils/
// PasswordEncoder.scala), with the JDK's own JCE: PBKDF2WithHmacSHA512, 128-bit key, 4096 iterations, a random
// 256-byte salt, AES/CBC/PKCS5Padding with the IV the cipher picks. Reads the secret, then the password, one line
// each on stdin (never as arguments); prints the encoded map string.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

public class KafkaPasswordEncode {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String secret = in.readLine();
        String password = in.readLine();
        byte[] salt = new byte[256];
        new SecureRandom().nextBytes(salt);
        SecretKeyFactory factory = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA512");
        PBEKeySpec spec = new PBEKeySpec(secret.toCharArray(), salt, 4096, 128);
        SecretKeySpec key = new SecretKeySpec(factory.generateSecret(spec).getEncoded(), "AES");
        Cipher cipher = Cipher.getInstance("AES/CBC/PKCS5Padding");
        cipher.init(Cipher.ENCRYPT_MODE, key);
        byte[] encrypted = cipher.doFinal(password.getBytes(StandardCharsets.UTF_8));
        Base64.Encoder b64 = Base64.getEncoder();
        Map<String, String> map = new LinkedHashMap<>();
        map.put("keyFactoryAlgorithm", factory.getAlgorithm());
        map.put("cipherAlgorithm", "AES/CBC/PKCS5Padding");
        map.put("keyLength", "128");
        map.put("salt", b64.encodeToString(salt));
        map.put("iterations", "4096");
        map.put("encryptedPassword", b64.encodeToString(encrypted));
        map.put("passwordLength", Integer.toString(password.length()));
        IvParameterSpec iv = cipher.getParameters().getParameterSpec(IvParameterSpec.class);
        map.put("initializationVector", b64.encodeToString(iv.getIV()));
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, String> entry : map.entrySet()) {
            if (out.length() > 0) out.append(',');
            out.append(entry.getKey()).append(':').append(entry.getValue());
        }
        System.out.println(out);
    }
}
